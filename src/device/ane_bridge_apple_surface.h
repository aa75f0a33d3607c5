#pragma once
// The `ane` device's IOSurfaces: the memory of the surfaces make_surface hands out, and of the
// ones a program copies host surfaces through. The lock discipline (docs/ane/DEVICE.md, "The
// lock discipline"): the CPU touches an IOSurface only while it holds its lock, and the device
// never gets a locked one. Runtime code writes a surface's bytes at any time (a packed input, a
// KV column), so each of these stays locked for the CPU from creation to destruction and is
// unlocked only while an evaluation binds it (DeviceTurn). Apple only (and the Linux test of
// the discipline, against tests/apple_sdk and a stand-in IOSurface).
#include <IOSurface/IOSurfaceRef.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "device/ane_bridge_apple_runtime.h"
#include "device/ane_request_cache.h"
#include "device/ane_surface.h"

namespace orion::device::apple {

class IoSurface final : public AneSurfaceOwner {
 public:
  // Takes `surface` (at least `bytes` long), locks it for the CPU and zeroes its first `bytes`.
  // Its serial comes from `requests`, which forgets the requests naming it when it dies.
  IoSurface(Ref<IOSurfaceRef> surface, std::size_t bytes, std::shared_ptr<AneRequestCache> requests)
      : surface_(std::move(surface)), requests_(std::move(requests)), serial_(requests_->new_serial()) {
    if (const kern_return_t r = IOSurfaceLock(surface_.get(), 0, nullptr); r != 0)
      throw Error("device ane: IOSurfaceLock failed with " + std::to_string(r) + " on a new surface of " +
                  std::to_string(bytes) + " bytes");
    locked_ = true;
    bytes_ = {static_cast<std::byte*>(IOSurfaceGetBaseAddress(surface_.get())), bytes};
    std::memset(bytes_.data(), 0, bytes);
  }
  // No request may outlive the IOSurface it names, and a surface is released unlocked.
  ~IoSurface() override {
    requests_->forget(serial_);
    if (locked_) IOSurfaceUnlock(surface_.get(), 0, nullptr);
  }
  IoSurface(const IoSurface&) = delete;
  IoSurface& operator=(const IoSurface&) = delete;

  IOSurfaceRef get() const { return surface_.get(); }
  std::uint64_t serial() const { return serial_; }
  std::span<std::byte> bytes() const { return bytes_; }
  // Whether the device whose requests these are made this surface.
  bool made_by(const AneRequestCache* requests) const { return requests_.get() == requests; }

  // The surface to the device for an evaluation of `program`, and back to the CPU after it.
  // Throw orion::Error naming `program`: a surface already unlocked is in another evaluation
  // (the caller's contract), a memory that moved would leave bytes() pointing at stale pages.
  void unlock_for_device(const std::string& program) {
    if (!locked_)
      throw Error("device ane: evaluating " + program + ": a surface of the device's is in two evaluations at once");
    if (const kern_return_t r = IOSurfaceUnlock(surface_.get(), 0, nullptr); r != 0)
      throw Error("device ane: evaluating " + program + ": IOSurfaceUnlock failed with " + std::to_string(r));
    locked_ = false;
  }
  void lock_for_cpu(const std::string& program) {
    if (locked_) return;
    if (const kern_return_t r = IOSurfaceLock(surface_.get(), 0, nullptr); r != 0)
      throw Error("device ane: after evaluating " + program + ": IOSurfaceLock failed with " + std::to_string(r));
    locked_ = true;
    if (IOSurfaceGetBaseAddress(surface_.get()) != bytes_.data())
      throw Error("device ane: after evaluating " + program +
                  ": an IOSurface's memory moved while the device held it; its surface cannot be used again");
  }

 private:
  Ref<IOSurfaceRef> surface_;
  std::shared_ptr<AneRequestCache> requests_;
  std::uint64_t serial_;
  std::span<std::byte> bytes_;
  bool locked_ = false;
};

// `surface` as the AneSurface make_surface returns: its bytes are the IOSurface's memory.
inline AneSurface device_surface(Ref<IOSurfaceRef> surface, std::size_t bytes,
                                 std::shared_ptr<AneRequestCache> requests) {
  auto owner = std::make_unique<IoSurface>(std::move(surface), bytes, std::move(requests));
  const std::span<std::byte> memory = owner->bytes();
  return AneSurface(memory, std::move(owner));
}

// The IOSurfaces of one evaluation, the device's for its duration: each distinct one unlocked
// here and locked again by relock(), or by the destructor when an error left first (a second
// error is then dropped: the first is the one reported).
class DeviceTurn {
 public:
  DeviceTurn(const std::vector<IoSurface*>& surfaces, std::string program) : program_(std::move(program)) {
    try {
      for (IoSurface* s : surfaces) {
        if (std::find(unlocked_.begin(), unlocked_.end(), s) != unlocked_.end()) continue;  // bound twice
        s->unlock_for_device(program_);
        unlocked_.push_back(s);
      }
    } catch (...) {
      relock_quietly();
      throw;
    }
  }
  ~DeviceTurn() { relock_quietly(); }
  DeviceTurn(const DeviceTurn&) = delete;
  DeviceTurn& operator=(const DeviceTurn&) = delete;

  // Every surface back to the CPU; throws orion::Error for the first that cannot be.
  void relock() {
    std::vector<IoSurface*> left = std::exchange(unlocked_, {});
    for (std::size_t i = 0; i < left.size(); ++i) {
      try {
        left[i]->lock_for_cpu(program_);
      } catch (...) {
        unlocked_.assign(left.begin() + static_cast<std::ptrdiff_t>(i) + 1, left.end());
        relock_quietly();
        throw;
      }
    }
  }

 private:
  void relock_quietly() noexcept {
    for (IoSurface* s : std::exchange(unlocked_, {})) {
      try {
        s->lock_for_cpu(program_);
      } catch (...) {  // the error that left first is the one reported
      }
    }
  }

  std::vector<IoSurface*> unlocked_;
  std::string program_;
};

}  // namespace orion::device::apple
