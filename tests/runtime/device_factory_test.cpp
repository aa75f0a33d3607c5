// runtime::open_device: the device a name and options make, and the executable's identity the
// package cache keys by.
#include <gtest/gtest.h>

#include "core/error.h"
#include "device/ane_sim.h"
#include "runtime/device_factory.h"
#include "runtime/executable_identity.h"

namespace orion::runtime {
namespace {

TEST(DeviceFactory, NamesRoundTripAndAnUnknownOneIsRefused) {
  for (const char* n : {"cpu", "ane-sim", "ane"}) EXPECT_EQ(device_kind_name(device_kind(n)), n);
  EXPECT_THROW(device_kind("gpu"), Error);
}

TEST(DeviceFactory, CpuNeedsNoDeviceAndAneSimIsTheEmulatorWithItsOptions) {
  DeviceOptions cpu;
  cpu.kind = DeviceKind::cpu;
  EXPECT_EQ(open_device(cpu), nullptr);
  DeviceOptions o = ane_sim_options(2);
  o.compile_budget = 7;
  const std::unique_ptr<device::AneDevice> d = open_device(o);
  ASSERT_NE(dynamic_cast<device::AneSim*>(d.get()), nullptr);
  EXPECT_EQ(d->compiles(), 0);
}

TEST(ExecutableIdentity, IsStableWithinTheProcess) {
  EXPECT_EQ(&executable_identity(), &executable_identity());
  EXPECT_EQ(executable_identity(), executable_identity());
}

}  // namespace
}  // namespace orion::runtime
