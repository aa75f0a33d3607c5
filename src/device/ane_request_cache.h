#pragma once
// The `ane` bridge's evaluation requests, by program and by the surfaces they bind. A
// _ANERequest names the IOSurfaces of one evaluation, so a program evaluated on several sets of
// surfaces (one program shared by every layer, each layer with its own weights and KV cache)
// needs one request per set: made at its first evaluation, kept for the next ones, and dropped
// when one of its surfaces is destroyed, so that no request outlives an IOSurface it names.
// Surfaces are known by serials this cache gives out, never reused (an address can be).
// Portable: a request is an opaque handle here; tested everywhere, used by the Apple bridge.
// Thread-safe: programs are evaluated from several threads, and a surface dies on any thread.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace orion::device {

class AneRequestCache {
 public:
  // A request, released when the last holder lets go: an evaluation holds its own while it runs.
  using Request = std::shared_ptr<const void>;
  // The serials of the surfaces bound, inputs then outputs in binding order.
  using Key = std::vector<std::uint64_t>;

  // A serial no surface of this cache had before.
  std::uint64_t new_serial();

  // The request of program `program` for `key`, made by `make` (outside the lock) the first time.
  Request get(int program, const Key& key, const std::function<Request()>& make);

  // Drops every request naming surface `serial`: it is being destroyed.
  void forget(std::uint64_t serial);
  // Drops every request (the device is closing).
  void clear();

  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t next_serial_ = 1;
  std::map<std::pair<int, Key>, Request> requests_;
};

}  // namespace orion::device
