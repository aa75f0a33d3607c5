// AneSurface over memory a device owns (AneDevice::make_surface) as well as host memory: the
// same bytes() for packing and ane-sim, copies that never share memory, moves that keep it, the
// memory freed with its surface; ane-sim's default make_surface, and an evaluation on surfaces
// of both kinds at once. The `ane` device's IOSurfaces: ane_iosurface_stand_in_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"
#include "device/device_test_util.h"
#include "device/external_memory_sim.h"

namespace orion::device {
namespace {

using testing::ExternalMemorySim;
using testing_util::TempDir;
using namespace test_programs;

constexpr auto kSurfaceTestBytes = static_cast<std::size_t>(C * S * 2);

bool all_zero(const AneSurface& s) {
  for (std::byte b : s.bytes())
    if (b != std::byte{0}) return false;
  return true;
}

// [1, C, 1, S] with x[c][s] = (c - s % 9) / 4, exact in fp16.
Tensor surface_test_tensor(float scale = 1.0f) {
  std::vector<float> v(C * S);
  for (int c = 0; c < C; ++c)
    for (int s = 0; s < S; ++s) v[c * S + s] = scale * static_cast<float>(c - s % 9) / 4.0f;
  return Tensor::from_floats({1, C, 1, S}, v);
}

TEST(AneSurface, HostMemoryHasNoOwner) {
  const AneSurface s(100);
  EXPECT_EQ(s.size(), 100u);
  EXPECT_TRUE(all_zero(s));
  EXPECT_EQ(s.owner(), nullptr);
}

TEST(AneSurface, ADeviceSurfaceIsTheDevicesMemory) {
  ExternalMemorySim sim;
  AneSurface s = sim.make_surface(kSurfaceTestBytes);
  ASSERT_TRUE(ExternalMemorySim::made_here(s));
  auto& block = dynamic_cast<ExternalMemorySim::Block&>(*s.owner());
  EXPECT_EQ(s.bytes().data(), block.memory().data());
  EXPECT_EQ(s.size(), kSurfaceTestBytes);
  EXPECT_TRUE(all_zero(s));
  s.bytes()[5] = std::byte{7};
  EXPECT_EQ(block.memory()[5], std::byte{7});
}

TEST(AneSurface, PackingSeesTheSameBytesOnEitherMemory) {
  ExternalMemorySim sim;
  AneSurface device = sim.make_surface(kSurfaceTestBytes + 64), host(kSurfaceTestBytes + 64);
  pack_fp16(surface_test_tensor(), device);
  pack_fp16(surface_test_tensor(), host);
  EXPECT_TRUE(std::equal(device.bytes().begin(), device.bytes().end(), host.bytes().begin()));
  EXPECT_EQ(unpack_fp16(device, {1, C, 1, S}).to_floats(), surface_test_tensor().to_floats());
}

TEST(AneSurface, ACopyIsHostMemoryWithTheSameBytes) {
  ExternalMemorySim sim;
  AneSurface device = sim.make_surface(64);
  device.bytes()[3] = std::byte{9};
  AneSurface copy = device;
  EXPECT_EQ(copy.owner(), nullptr);
  EXPECT_NE(copy.bytes().data(), device.bytes().data());
  EXPECT_EQ(copy.bytes()[3], std::byte{9});
  copy.bytes()[3] = std::byte{1};
  EXPECT_EQ(device.bytes()[3], std::byte{9});
  EXPECT_EQ(sim.made(), 1);
}

TEST(AneSurface, MovesKeepTheMemoryAndItIsFreedWithTheSurface) {
  ExternalMemorySim sim;
  std::vector<AneSurface> surfaces;
  std::vector<const std::byte*> memory;
  for (int i = 0; i < 20; ++i) {  // the vector grows: its surfaces move
    surfaces.push_back(sim.make_surface(64));
    memory.push_back(surfaces.back().bytes().data());
  }
  for (std::size_t i = 0; i < surfaces.size(); ++i) EXPECT_EQ(surfaces[i].bytes().data(), memory[i]);
  AneSurface host(32);
  const std::byte* host_memory = host.bytes().data();
  AneSurface moved = std::move(host);
  EXPECT_EQ(moved.bytes().data(), host_memory);
  EXPECT_EQ(host.size(), 0u);  // a moved-from surface is empty
  EXPECT_EQ(sim.live(), 20);
  surfaces.erase(surfaces.begin(), surfaces.begin() + 5);
  EXPECT_EQ(sim.live(), 15);
  surfaces.front() = sim.make_surface(8);  // the one assigned over is freed
  EXPECT_EQ(sim.live(), 15);
}

TEST(AneSurface, ASurfaceMayOutliveItsDevice) {
  auto sim = std::make_unique<ExternalMemorySim>();
  AneSurface s = sim->make_surface(64);
  s.bytes()[0] = std::byte{1};
  sim.reset();
  EXPECT_EQ(s.bytes()[0], std::byte{1});
}

TEST(AneSurface, AneSimsSurfacesAreHostMemory) {
  AneSim sim;
  AneDevice& device = sim;
  const AneSurface s = device.make_surface(kSurfaceTestBytes);
  EXPECT_EQ(s.owner(), nullptr);
  EXPECT_EQ(s.size(), kSurfaceTestBytes);
  EXPECT_TRUE(all_zero(s));
}

// One evaluation on the device's surfaces and host ones at once gives what host ones give.
TEST(AneSurface, AnEvaluationTakesBothKindsAtOnce) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  ExternalMemorySim sim;
  const AneProgramId id = sim.compile(dir.path());
  sim.load(id);
  const std::size_t bytes = kSurfaceTestBytes;
  AneSurface a = sim.make_surface(bytes), b(bytes), m = sim.make_surface(bytes), z(bytes);
  pack_fp16(surface_test_tensor(), a);
  pack_fp16(surface_test_tensor(0.5f), b);
  sim.evaluate(id, {&a, &b}, {&m, &z});
  AneSurface ha(bytes), hb(bytes), hm(bytes), hz(bytes);
  pack_fp16(surface_test_tensor(), ha);
  pack_fp16(surface_test_tensor(0.5f), hb);
  sim.evaluate(id, {&ha, &hb}, {&hm, &hz});
  EXPECT_TRUE(std::equal(m.bytes().begin(), m.bytes().end(), hm.bytes().begin()));
  EXPECT_TRUE(std::equal(z.bytes().begin(), z.bytes().end(), hz.bytes().begin()));
  EXPECT_FALSE(all_zero(m));
  sim.unload(id);
}

}  // namespace
}  // namespace orion::device
