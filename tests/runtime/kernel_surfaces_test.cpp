// KernelSurfaces (runtime/kernel_call.h) allocate their surfaces through the device
// (AneDevice::make_surface): on a device whose surfaces are its own memory, the runtime weight,
// the resident input and the outputs live there, and a call gives what host surfaces give.
#include <gtest/gtest.h>

#include <vector>

#include "compile/driver.h"
#include "core/temp_folder.h"
#include "device/ane_sim.h"
#include "device/external_memory_sim.h"
#include "ir/builder.h"
#include "runtime/kernel_call.h"

namespace orion::runtime {
namespace {

using device::testing::ExternalMemorySim;

constexpr std::int64_t kSurfacesSeq = 32, kSurfacesDim = 64;

// z = y @ w, w a runtime weight (an input the host writes); exact in fp16 for these values.
struct SurfacesKernel {
  compile::KernelIo io;
  TensorMap params, table;
};

SurfacesKernel surfaces_kernel(const std::string& folder) {
  ir::Builder b("k0");
  const auto y = b.input("y", DType::f32, {kSurfacesSeq, kSurfacesDim});
  b.output(b.name(b.matmul(y, b.param("w", DType::f32, {kSurfacesDim, kSurfacesDim})), "z"));
  compile::KernelOptions o;
  o.lowering.kernel_name = "k0";
  o.lowering.runtime_weights = true;
  SurfacesKernel k{compile::build_kernel(b.finish(), {}, folder, o).lowered.io, {}, {}};
  std::vector<float> w(kSurfacesDim * kSurfacesDim), x(kSurfacesSeq * kSurfacesDim);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 4.0f;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  k.params.emplace("w", Tensor::from_floats({kSurfacesDim, kSurfacesDim}, w));
  k.table.emplace("y", Tensor::from_floats({kSurfacesSeq, kSurfacesDim}, x));
  return k;
}

// z computed by `device` through KernelSurfaces allocated on it.
std::vector<float> surfaces_call(device::AneDevice& device, const std::string& folder, SurfacesKernel k) {
  const device::AneProgramId id = device.compile(folder);
  device.load(id);
  KernelSurfaces surfaces(device, k.io);
  surfaces.write_weights(k.io, k.params);
  surfaces.call(device, id, k.io, k.table, "k0");
  device.unload(id);
  return k.table.at("z").to_floats();
}

TEST(KernelSurfaces, AllocatesThroughTheDevice) {
  const TempFolder dir("orion-kernel-surfaces-test");
  const SurfacesKernel k = surfaces_kernel(dir.path() + "/k0");
  ASSERT_EQ(k.io.inputs.size(), 2u);  // w (the weight) and y
  ExternalMemorySim sim;
  {
    KernelSurfaces surfaces(sim, k.io);
    EXPECT_EQ(sim.made(), 3);
    EXPECT_EQ(sim.live(), 3);
    device::AneSurface* resident = surfaces.keep_resident(k.io, "y");
    ASSERT_NE(resident, nullptr);
    EXPECT_TRUE(ExternalMemorySim::made_here(*resident));
    EXPECT_EQ(resident->size(), static_cast<std::size_t>(k.io.input_bytes));
    ASSERT_NE(surfaces.output(k.io, "z"), nullptr);
    EXPECT_TRUE(ExternalMemorySim::made_here(*surfaces.output(k.io, "z")));
  }
  EXPECT_EQ(sim.live(), 0);
}

TEST(KernelSurfaces, TheDevicesMemoryComputesWhatHostMemoryDoes) {
  const TempFolder dir("orion-kernel-surfaces-test");
  const std::string folder = dir.path() + "/k0";
  const SurfacesKernel k = surfaces_kernel(folder);
  ExternalMemorySim external;
  device::AneSim host;
  const std::vector<float> got = surfaces_call(external, folder, k), want = surfaces_call(host, folder, k);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, std::vector<float>(got.size(), 0.0f));
  EXPECT_EQ(external.made(), 3);
}

}  // namespace
}  // namespace orion::runtime
