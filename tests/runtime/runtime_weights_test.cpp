// Runtime weights (compile/passes/lower_layout.h, KernelIoTensor::weight): a GPT-2 block's
// kernels compiled with every weight as an input run on ane-sim like the CPU executor with the
// weights bound, in default and faithful mode; a weight written into its surface is the one
// used; and nothing of the program depends on the weights' values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "compile/driver.h"
#include "core/random.h"
#include "core/temp_folder.h"
#include "device/ane_sim.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2_test_config.h"
#include "runtime/kernel_call.h"

namespace orion::runtime {
namespace {

constexpr std::int64_t kWeightsSeq = 24;

Tensor weights_randn(const Shape& shape, Rng& rng, float stddev) {
  Tensor t(DType::f32, shape);
  rng.fill_normal(t.span<float>(), 0.0f, stddev);
  return t;
}

struct WeightKernels {
  compile::Partition plan;
  TensorMap params;
};

// `on_chip_bytes`: the budget that cuts larger weights into chunks (chunk_matmuls).
WeightKernels weight_kernels(std::int64_t on_chip_bytes = compile::AneTarget{}.on_chip_bytes) {
  const model::Gpt2Config c = model::testing::small_gpt2_config({.layers = 1, .dim = 64, .vocab = 100, .positions = 64});
  const ir::Graph g = model::gpt2_graph(c, {.seq = kWeightsSeq});
  compile::PartitionOptions po;
  po.seq = kWeightsSeq;
  po.target.on_chip_bytes = on_chip_bytes;
  Rng rng(11);
  const auto init = model::gpt2_init_params(g, 1, rng);
  return {compile::plan_segments(g, po), TensorMap(init.begin(), init.end())};
}

// Relative RMS error of `got` against `want`.
double weights_rel_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> a = got.to_floats(), b = want.to_floats();
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    err += (a[i] - b[i]) * (a[i] - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

// Each kernel with params, on ane-sim with its weights written into its surfaces, against the
// CPU executor in f32.
// With `chunked`, weights over a small on-chip budget are cut into chunks, each its own input
// carrying its part of the param (KernelIoTensor::weight_axis).
void expect_kernels_match(bool faithful, int* checked, bool chunked = false) {
  WeightKernels k = weight_kernels(chunked ? 12'000 : compile::AneTarget{}.on_chip_bytes);
  int parts = 0;
  const TempFolder dir("orion-runtime-weights-test");
  device::AneSimOptions so;
  so.faithful = faithful;
  device::AneSim sim(so);
  Rng rng(5);
  for (const compile::Segment& s : k.plan.segments) {
    if (s.placement != compile::Placement::ane || s.graph.nodes_of(ir::Op::param).empty()) continue;
    compile::KernelOptions o;
    o.lowering.kernel_name = s.name;
    o.lowering.runtime_weights = true;
    const std::string folder = dir.path() + "/" + s.name;
    const compile::BuiltKernel built = compile::build_kernel(s.graph, {}, folder, o);
    const compile::KernelIo& io = built.lowered.io;
    int weights = 0;
    for (const compile::KernelIoTensor& t : io.inputs) {
      weights += !t.weight.empty() && t.weight_axis < 0;
      parts += t.weight_axis >= 0;
      // The host clamps a weight as it writes it: the program does not again.
      if (!t.weight.empty()) {
        EXPECT_EQ(built.mil.text.find(t.name + "_clamped"), std::string::npos) << t.name;
      }
    }
    if (!chunked) {
      EXPECT_EQ(weights, static_cast<int>(s.graph.nodes_of(ir::Op::param).size())) << s.name;
    }
    EXPECT_EQ(built.mil.text.find("conv("), std::string::npos) << s.name << ": a conv on a runtime weight";
    const device::AneProgramId id = sim.compile(folder);
    sim.load(id);
    check_bindings(sim, id, io, folder);

    TensorMap table;
    for (ir::ValueId in : s.graph.nodes_of(ir::Op::input)) {
      const ir::Node& n = s.graph.node(in);
      table[n.name] = weights_randn(n.type.shape, rng, 0.5f);
    }
    exec::CpuExecutor cpu(s.graph);
    TensorMap bound = table;
    for (const auto& [name, w] : k.params) bound[name] = w;

    KernelSurfaces surfaces(sim, io);
    EXPECT_GT(surfaces.write_weights(io, k.params), 0);
    TensorMap got = table;
    surfaces.call(sim, id, io, got, s.name);
    std::vector<Tensor> want = cpu.run(bound);
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::string& out = s.graph.node(s.graph.outputs()[i]).name;
      EXPECT_LT(weights_rel_error(got.at(out), want[i]), 2e-2) << s.name << " " << out;
    }

    // A new weight written into the resident surfaces is the weight the next call uses.
    TensorMap changed = k.params;
    for (ir::ValueId p : s.graph.nodes_of(ir::Op::param)) {
      const std::string& name = s.graph.node(p).name;
      changed[name] = weights_randn(changed.at(name).shape(), rng, 0.2f);
      bound[name] = changed[name];
    }
    surfaces.write_weights(io, changed);
    TensorMap again = table;
    surfaces.call(sim, id, io, again, s.name);
    want = cpu.run(bound);
    int changed_outputs = 0;  // an output may pass a value through (a kernel cut small)
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::string& out = s.graph.node(s.graph.outputs()[i]).name;
      changed_outputs += weights_rel_error(again.at(out), got.at(out)) > 1e-2;
      EXPECT_LT(weights_rel_error(again.at(out), want[i]), 2e-2) << s.name << " " << out;
    }
    EXPECT_GT(changed_outputs, 0) << s.name << ": no output changed with the weights";
    sim.unload(id);
    ++*checked;
  }
  EXPECT_EQ(sim.compiles(), *checked);
  EXPECT_EQ(parts > 0, chunked);
}

TEST(RuntimeWeights, KernelsMatchTheCpuAndUseTheWrittenWeights) {
  int checked = 0;
  expect_kernels_match(false, &checked);
  EXPECT_GT(checked, 0);
}

TEST(RuntimeWeights, FaithfulModeRunsThemExactlyToo) {
  int checked = 0;
  expect_kernels_match(true, &checked);
  EXPECT_GT(checked, 0);
}

TEST(RuntimeWeights, WeightsCutForTheOnChipBudgetAreWrittenChunkByChunk) {
  int checked = 0;
  expect_kernels_match(false, &checked, true);
  EXPECT_GT(checked, 0);
}

TEST(RuntimeWeights, TheProgramDoesNotDependOnTheWeights) {
  const WeightKernels k = weight_kernels();
  const TempFolder dir("orion-runtime-weights-test");
  for (const compile::Segment& s : k.plan.segments) {
    if (s.placement != compile::Placement::ane) continue;
    compile::KernelOptions o;
    o.lowering.runtime_weights = true;
    const compile::BuiltKernel a = compile::build_kernel(s.graph, {}, dir.path() + "/a", o);
    const compile::BuiltKernel b = compile::build_kernel(s.graph, k.params, dir.path() + "/b", o);
    // Given weights are baked: the same kernel with none given has them all as inputs.
    EXPECT_LE(b.lowered.io.inputs.size(), a.lowered.io.inputs.size());
    for (const compile::KernelIoTensor& t : a.lowered.io.inputs)
      if (!t.weight.empty()) {
        EXPECT_TRUE(t.fixed);
        EXPECT_EQ(t.padded[3] % 32, 0);
      }
  }
}

}  // namespace
}  // namespace orion::runtime
