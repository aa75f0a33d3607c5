// The cost model (device/ane_cost_model.h): its arithmetic on hand-made kernel steps, checked
// against values worked out by hand, and the names of the chips it knows.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "device/ane_cost_model.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

compile::KernelIoTensor io_tensor(const std::string& name, std::int64_t c, std::int64_t s, bool fixed = false,
                                  const std::string& weight = "") {
  compile::KernelIoTensor t;
  t.name = name;
  t.logical = {1, c, 1, s};
  t.padded = t.logical;
  t.bytes = c * s * 2;
  t.fixed = fixed || !weight.empty();
  t.weight = weight;
  return t;
}

// A decode step as weights-as-inputs packages have it: x [1, 64, 1, 32] (one real token), a
// weight [128, 64] and a cache [1, 64, 1, 256]; the output [1, 128, 1, 32].
compile::PackageStep decode_step() {
  compile::PackageStep s;
  s.weights = compile::KernelWeights::inputs;
  s.io.seq = 1;
  s.io.padded_seq = 32;
  s.io.inputs = {io_tensor("cache", 64, 256, true), io_tensor("w", 128, 64, false, "p"), io_tensor("x", 64, 32)};
  s.io.outputs = {io_tensor("y", 128, 32)};
  return s;
}

TEST(AneCostModel, KernelWorkCountsWeightsCacheAndSurfaces) {
  const KernelWork w = kernel_work(decode_step());
  // 2 x 128 x 64 for the weight, 2 x 64 x 256 over the cache, for the one token.
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 128 * 64 + 2.0 * 64 * 256);
  // cache 32768 + weight 16384 + x 4096 + y 8192 bytes.
  EXPECT_DOUBLE_EQ(w.bytes, 32768 + 16384 + 4096 + 8192);

  compile::PackageStep baked = decode_step();
  baked.weights = compile::KernelWeights::baked;
  baked.io.inputs.erase(baked.io.inputs.begin() + 1);  // the weight is a constant
  baked.weight_bytes = 128 * 64 * 2;
  const KernelWork b = kernel_work(baked);
  EXPECT_DOUBLE_EQ(b.flops, w.flops);
  EXPECT_DOUBLE_EQ(b.bytes, w.bytes);
  // int8 weights: a byte each, the 4-bit forms half a byte, the arithmetic unchanged.
  EXPECT_DOUBLE_EQ(kernel_work(baked, compile::WeightForm::int8).bytes, w.bytes - 128 * 64);
  EXPECT_DOUBLE_EQ(kernel_work(baked, compile::WeightForm::int8).flops, w.flops);
  for (compile::WeightForm f : {compile::WeightForm::int4, compile::WeightForm::uint4, compile::WeightForm::lut4})
    EXPECT_DOUBLE_EQ(kernel_work(baked, f).bytes, w.bytes - 128 * 64 * 1.5);
}

TEST(AneCostModel, TheSlowerOfComputeAndMemoryPlusDispatch) {
  const AneChip chip{"test", 10.0, 100.0, 0.1, "by hand"};
  // 1 GFLOP on 10 TFLOPS is 0.1 ms; 1 MB at 100 GB/s is 0.01 ms: compute-bound.
  EXPECT_NEAR(projected_ms(chip, {1e9, 1e6}), 0.1 + 0.1, 1e-12);
  // 1 MFLOP is 0.0001 ms; 100 MB is 1 ms: memory-bound.
  EXPECT_NEAR(projected_ms(chip, {1e6, 1e8}), 1.0 + 0.1, 1e-12);
}

TEST(AneCostModel, ProjectsEachProgramAndNamesTheChips) {
  compile::PackageManifest m;
  m.programs.push_back({"decode", 1, {}, {}, {decode_step(), decode_step()}, {}});
  const AneChip& m4 = ane_chip("m4");
  const std::vector<ProgramProjection> p = project_package(m, m4);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].evaluations, 2);
  EXPECT_NEAR(p[0].ms, 2 * projected_ms(m4, kernel_work(decode_step())), 1e-12);
  EXPECT_GT(ane_chip("m3-max").ane_gbps, ane_chip("m3").ane_gbps);
  const std::string e = test_programs::error_of([] { ane_chip("m9"); });
  EXPECT_NE(e.find("no chip \"m9\" (known: m1, m1-max, m2"), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::device
