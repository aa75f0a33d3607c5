#pragma once
// A test double of the device: ane-sim whose make_surface hands out memory the device owns, as
// the `ane` device hands out its IOSurfaces' memory. Each block is counted while it lives, so a
// test sees what was allocated through the device and that it was freed with its surface (even
// after the device).
#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "device/ane_sim.h"

namespace orion::device::testing {

class ExternalMemorySim final : public AneSim {
 public:
  // The memory of one surface, and the device's count of live blocks.
  class Block final : public AneSurfaceOwner {
   public:
    Block(std::size_t bytes, std::shared_ptr<std::atomic<int>> live)
        : memory_(bytes), live_(std::move(live)) {
      ++*live_;
    }
    ~Block() override { --*live_; }
    std::span<std::byte> memory() { return memory_; }

   private:
    std::vector<std::byte> memory_;
    std::shared_ptr<std::atomic<int>> live_;
  };

  AneSurface make_surface(std::size_t bytes) override {
    ++made_;
    auto block = std::make_unique<Block>(bytes, live_);
    const std::span<std::byte> memory = block->memory();
    return AneSurface(memory, std::move(block));
  }

  // Surfaces made, and those still alive.
  int made() const { return made_; }
  int live() const { return *live_; }
  static bool made_here(const AneSurface& s) { return dynamic_cast<Block*>(s.owner()) != nullptr; }

 private:
  std::atomic<int> made_{0};
  std::shared_ptr<std::atomic<int>> live_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace orion::device::testing
