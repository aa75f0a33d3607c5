#include "core/content_hash.h"

#include <cstdio>

#include <xxhash.h>

#include "core/error.h"
#include "core/mapped_file.h"

namespace orion {

struct ContentHasher::State {
  XXH3_state_t* s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {
  if (!state_->s || XXH3_128bits_reset(state_->s) != XXH_OK) throw Error("xxHash: cannot create a hash state");
}

ContentHasher::~ContentHasher() = default;

void ContentHasher::update(std::span<const std::byte> bytes) {
  // Each update is framed by its length, so ("ab", "c") and ("a", "bc") hash differently.
  const std::uint64_t n = bytes.size();
  XXH3_128bits_update(state_->s, &n, sizeof n);
  XXH3_128bits_update(state_->s, bytes.data(), bytes.size());
}

void ContentHasher::update_unframed(std::span<const std::byte> bytes) {
  XXH3_128bits_update(state_->s, bytes.data(), bytes.size());
}

void ContentHasher::update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }

void ContentHasher::update_file(const std::string& path) { update(MappedFile::open(path)->bytes()); }

std::string ContentHasher::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state_->s);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace orion
