#pragma once
// Content hashes that key caches (compiled packages, compiled programs): XXH3 128-bit from
// xxHash, fast enough to hash a model's weights on every run (GB/s), stable across machines
// and versions of the library (XXH3's output is frozen since 0.8.0). Not a cryptographic hash:
// a cache trusts its own folder, and a collision would need 2^64 entries.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace orion {

class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  // Bytes appended to the stream as they are, without update()'s length framing: a stream
  // hashed in pieces hashes like its concatenation, as `xxh128sum` computes it (token files'
  // checksums, which are written a chunk at a time).
  void update_unframed(std::span<const std::byte> bytes);
  // The bytes of a whole file; throws orion::Error naming it when it cannot be read.
  void update_file(const std::string& path);
  // 32 lowercase hex digits.
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace orion
