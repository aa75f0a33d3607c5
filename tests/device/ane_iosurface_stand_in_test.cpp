// The lock discipline of the `ane` device's IOSurfaces (device/ane_bridge_apple_surface.h) off
// Apple: compiled against the declarations of tests/apple_sdk and run on a stand-in IOSurface
// that counts its locks. Locked for the CPU whenever no evaluation holds it, unlocked exactly
// once per evaluation, released unlocked, and no request left naming it once it is gone.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "device/ane_bridge_apple_surface.h"
#include "device/core_foundation_stand_in.h"
#include "device/device_test_util.h"

namespace orion::device::apple {
namespace {

constexpr std::size_t kIoBytes = 256;
constexpr const char* kProgram = "kernels/qkv";

struct IoSurfaceFixture {
  std::shared_ptr<AneRequestCache> requests = std::make_shared<AneRequestCache>();
  AneSurface make() { return device_surface(Ref<IOSurfaceRef>(stand_in::iosurface(kIoBytes)), kIoBytes, requests); }
};

IoSurface& io_of(const AneSurface& s) { return dynamic_cast<IoSurface&>(*s.owner()); }

TEST(AneIoSurface, MadeLockedAndZeroedOverTheIoSurfacesMemory) {
  const int before = stand_in::live_objects();
  {
    IoSurfaceFixture f;
    AneSurface s = f.make();
    ASSERT_EQ(s.size(), kIoBytes);
    for (std::byte b : s.bytes()) ASSERT_EQ(b, std::byte{0});
    EXPECT_EQ(s.bytes().data(), IOSurfaceGetBaseAddress(io_of(s).get()));
    EXPECT_EQ(stand_in::locks(io_of(s).get()), 1);
  }
  EXPECT_EQ(stand_in::live_objects(), before);
  EXPECT_EQ(stand_in::released_locked(), 0);
  EXPECT_EQ(stand_in::unbalanced_unlocks(), 0);
}

TEST(AneIoSurface, AnEvaluationUnlocksEachSurfaceOnceAndLocksItAfter) {
  IoSurfaceFixture f;
  AneSurface a = f.make(), b = f.make();
  IoSurface &ia = io_of(a), &ib = io_of(b);
  {
    DeviceTurn turn({&ia, &ib, &ia}, kProgram);  // `a` bound twice
    EXPECT_EQ(stand_in::locks(ia.get()), 0);
    EXPECT_EQ(stand_in::locks(ib.get()), 0);
    turn.relock();
    EXPECT_EQ(stand_in::locks(ia.get()), 1);
    EXPECT_EQ(stand_in::locks(ib.get()), 1);
  }
  {
    const DeviceTurn failed({&ia, &ib}, kProgram);  // the evaluation threw: no relock() call
  }
  EXPECT_EQ(stand_in::locks(ia.get()), 1);
  EXPECT_EQ(stand_in::locks(ib.get()), 1);
  EXPECT_EQ(stand_in::unbalanced_unlocks(), 0);
}

TEST(AneIoSurface, ASurfaceInTwoEvaluationsAtOnceIsAnError) {
  IoSurfaceFixture f;
  AneSurface a = f.make(), b = f.make();
  IoSurface &ia = io_of(a), &ib = io_of(b);
  DeviceTurn first({&ia}, "kernels/first");
  const std::string m = test_programs::error_of([&] { DeviceTurn second({&ib, &ia}, kProgram); });
  EXPECT_NE(m.find(kProgram), std::string::npos) << m;
  EXPECT_NE(m.find("in two evaluations at once"), std::string::npos) << m;
  EXPECT_EQ(stand_in::locks(ib.get()), 1);  // given back when the second turn failed
  EXPECT_EQ(stand_in::locks(ia.get()), 0);  // still the first evaluation's
  first.relock();
  EXPECT_EQ(stand_in::locks(ia.get()), 1);
}

TEST(AneIoSurface, AFailedLockAfterTheEvaluationNamesTheProgramAndRelocksTheOthers) {
  IoSurfaceFixture f;
  AneSurface a = f.make(), b = f.make();
  IoSurface &ia = io_of(a), &ib = io_of(b);
  DeviceTurn turn({&ia, &ib}, kProgram);
  stand_in::fail_next_lock(ia.get());
  const std::string m = test_programs::error_of([&] { turn.relock(); });
  EXPECT_NE(m.find("after evaluating kernels/qkv: IOSurfaceLock failed"), std::string::npos) << m;
  EXPECT_EQ(stand_in::locks(ib.get()), 1);
}

TEST(AneIoSurface, MemoryThatMovedIsAnError) {
  IoSurfaceFixture f;
  AneSurface a = f.make();
  DeviceTurn turn({&io_of(a)}, kProgram);
  stand_in::move_memory(io_of(a).get());
  const std::string m = test_programs::error_of([&] { turn.relock(); });
  EXPECT_NE(m.find("memory moved"), std::string::npos) << m;
}

TEST(AneIoSurface, ASurfaceTakesItsRequestsWithIt) {
  IoSurfaceFixture f;
  int released = 0;
  const auto request = [&] { return AneRequestCache::Request(&released, [&](const void*) { ++released; }); };
  AneSurface a = f.make(), b = f.make();
  auto c = std::make_unique<AneSurface>(f.make());
  const std::uint64_t sa = io_of(a).serial(), sb = io_of(b).serial(), sc = io_of(*c).serial();
  f.requests->get(0, {sa, sc}, request);  // c bound
  f.requests->get(0, {sa, sb}, request);
  f.requests->get(1, {sc, sb}, request);  // c bound by another program
  c.reset();
  EXPECT_EQ(released, 2);
  EXPECT_EQ(f.requests->size(), 1u);
  EXPECT_EQ(stand_in::released_locked(), 0);
}

// The surfaces hold the device's cache: a surface that outlives its device is still released
// cleanly, and moves keep the IOSurface.
TEST(AneIoSurface, OutlivesItsDeviceAndMovesWithItsMemory) {
  auto f = std::make_unique<IoSurfaceFixture>();
  AneSurface a = f->make();
  f.reset();
  std::byte* memory = a.bytes().data();
  const AneSurface moved = std::move(a);
  EXPECT_EQ(moved.bytes().data(), memory);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from surface is empty
  EXPECT_EQ(stand_in::locks(io_of(moved).get()), 1);
}

}  // namespace
}  // namespace orion::device::apple
