// Weights as kernel inputs (compile::KernelWeights::inputs): the layers of a model share their
// kernels, so a deeper model compiles no more programs (kernel_sharing.h), and the package run
// on ane-sim still matches the CPU in prefill and decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/testing_temp_dir.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

model::LlamaModel small_qwen3(std::int64_t layers, std::int64_t positions = 96) {
  model::LlamaConfig c = model::testing::small_llama_config({layers, 64, 4, 2, 160, 300, true, positions});
  model::testing::make_family(c, "qwen3", 32, false);
  TensorMap w = model::llama_init_weights(c, 5);
  Rng rng(6);  // gains away from 1, so that a misplaced norm weight shows
  for (auto& [name, t] : w)
    if (t.rank() == 1) rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  return model::LlamaModel::from_weights(c, std::move(w), "qwen3 " + std::to_string(layers));
}

compile::PackageOptions inputs_form() {
  compile::PackageOptions po;
  po.kernel_weights = compile::KernelWeights::inputs;
  return po;
}

// The kernel folders a package holds: what a process compiles to run it.
std::set<std::string> kernel_folders(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (fs::exists(e.path() / "model.mil")) out.insert(e.path().filename().string());
  return out;
}

TEST(SharedKernels, ADeeperModelCompilesTheSamePrograms) {
  testing_util::TempDir dir;
  const model::LlamaModel two = small_qwen3(2), five = small_qwen3(5);
  compile_package(two, inputs_form(), {.window = 32}, dir.path() + "/two");
  compile_package(five, inputs_form(), {.window = 32}, dir.path() + "/five");
  const std::set<std::string> a = kernel_folders(dir.path() + "/two"), b = kernel_folders(dir.path() + "/five");
  EXPECT_EQ(a.size(), b.size());
  // Per program, a layer's kernel and the head's.
  EXPECT_LE(b.size(), 6u);
  int steps = 0, shared = 0;
  for (const auto& p : compile::read_manifest(dir.path() + "/five").programs)
    for (const auto& s : p.steps)
      if (s.placement == compile::Placement::ane) {
        ++steps;
        shared += !s.kernel.empty();
        EXPECT_EQ(s.weights, compile::KernelWeights::inputs);
      }
  EXPECT_EQ(steps - shared, static_cast<int>(b.size()));
  EXPECT_GE(shared, 8);  // layers 1-4 of prefill and decode run layer 0's kernels
}

// Measured on ane-sim (printed): rel L2 about 1e-3, as the baked package. A context of 160
// makes RoPE's tables large enough to leave the host segments' text for host_weights.bin.
TEST(SharedKernels, PrefillAndDecodeMatchTheCpu) {
  const model::LlamaModel m = small_qwen3(3, 160);
  testing_util::TempDir dir;
  compile_package(m, inputs_form(), {.window = 32}, dir.path() + "/pkg");
  int lifted = 0;
  for (const auto& w : compile::read_manifest(dir.path() + "/pkg").host_weights) lifted += w.name.starts_with("host_const.");
  EXPECT_GE(lifted, 2) << "RoPE's cos and sin tables";
  EXPECT_EQ(read_file(dir.path() + "/pkg/prefill_host0/graph.ir").find("rope_cos_table = const"), std::string::npos);
  const Errors e = run_package(m, inputs_form(), 24, 16, dir.path() + "/pkg");
  std::cout << "[ info ] weights as inputs: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
}

// Auto: baked while the kernels fit the budget, inputs past it.
TEST(SharedKernels, AutoBakesWhatFitsTheBudget) {
  const model::LlamaModel m = small_qwen3(2);
  testing_util::TempDir dir;
  compile::PackageOptions po;
  EXPECT_EQ(compile::write_ane_package(model::ane_programs(m, {.window = 32}), m.weights(), po, dir.path() + "/fits",
                                       model::package_model_info(m, "test"))
                .weights,
            compile::KernelWeights::baked);
  po.compile_budget = 3;
  const compile::PackageReport r = compile::write_ane_package(model::ane_programs(m, {.window = 32}), m.weights(), po,
                                                              dir.path() + "/over", model::package_model_info(m, "test"));
  EXPECT_EQ(r.weights, compile::KernelWeights::inputs);
  EXPECT_LT(r.programs, r.kernels);
  const std::string why = compile::read_manifest(dir.path() + "/over").weights_reason;
  EXPECT_NE(why.find("would exceed the compile budget of 3"), std::string::npos) << why;
}

}  // namespace
}  // namespace orion::runtime
