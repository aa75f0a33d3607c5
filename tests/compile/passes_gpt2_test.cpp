// The passes on a real graph: one GPT-2 block (model/gpt2_block) through bind_params,
// fold_constants, legalize, cse and dce leaves nothing the ANE rejects among the ops legalize
// knows, and computes what the block computed; after to_fp16 and clamp_boundaries it runs in
// the ANE's fp16 numerics within a documented tolerance of the f32 original.
#include <gtest/gtest.h>

#include <iostream>

#include "ir/transforms/bind_params.h"
#include "compile/passes/clamp_boundaries.h"
#include "ir/transforms/cse.h"
#include "ir/transforms/dce.h"
#include "ir/transforms/fold_constants.h"
#include "compile/passes/legalize.h"
#include "ir/transforms/pipeline.h"
#include "compile/passes/to_fp16.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2_block_fixture.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::max_rel_error;

using Block = model::testing::Gpt2BlockFixture;

Block make_block() { return model::testing::make_gpt2_block_fixture({.seq = 32, .dim = 64, .heads = 4}, 2024); }

int count_op(const ir::Graph& g, ir::Op op) { return static_cast<int>(g.nodes_of(op).size()); }

TEST(Gpt2Block, LegalizedGraphComputesTheSameOutputs) {
  Block b = make_block();
  const std::vector<Tensor> want = testing::run(b.graph, b.inputs());
  ASSERT_EQ(count_op(b.graph, ir::Op::gelu), 1);
  ASSERT_EQ(count_op(b.graph, ir::Op::layer_norm), 2);

  ir::Pipeline p;
  p.add(ir::bind_params_pass(b.params)).add(ir::fold_constants_pass()).add(legalize_pass()).add(ir::cse_pass()).add(ir::dce_pass());
  ir::Graph g = b.graph;
  const ir::PipelineResult r = p.run(g);
  for (const ir::Diagnostic& d : r.diagnostics) std::cout << "[ info ] " << d.pass << ": " << d.message << "\n";

  EXPECT_EQ(count_op(g, ir::Op::gelu), 0);
  EXPECT_EQ(count_op(g, ir::Op::layer_norm), 0);
  EXPECT_EQ(count_op(g, ir::Op::param), 0);
  // The names the device binds survive.
  ASSERT_EQ(g.nodes_of(ir::Op::input).size(), 1u);
  EXPECT_EQ(g.node(g.nodes_of(ir::Op::input)[0]).name, "x");
  EXPECT_EQ(g.node(g.outputs()[0]).name, "y");
  // cse left one constant per distinct scalar: 0.5 (gelu) and -0.5 (both norms' pow) once each.
  int halves = 0, minus_halves = 0;
  for (ir::ValueId id : g.nodes_of(ir::Op::constant)) {
    const Tensor& t = g.node(id).attr<Tensor>("value");
    if (t.rank() != 0) continue;
    halves += t.to_floats()[0] == 0.5f;
    minus_halves += t.to_floats()[0] == -0.5f;
  }
  EXPECT_EQ(halves, 1);
  EXPECT_EQ(minus_halves, 1);

  // Only the params are bound now: the constants carry the weights.
  TensorMap x_only{{"x", b.x}};
  const double err = max_rel_error(want, testing::run(g, x_only), 1e-2);
  std::cout << "[ info ] f32 largest error " << err << "\n";
  EXPECT_LE(err, 1e-5);
}

// After to_fp16 and clamp_boundaries the graph runs in the executor's f16 numerics (every
// stored value rounded to fp16, arithmetic inside an op in fp32, as the ANE stores tensors).
// Tolerance: fp16 keeps 11 significant bits (relative rounding 4.9e-4 per stored value); the
// block stores about 30 values along its longest path, and the residual output has magnitude
// ~1, so errors of a few 1e-3 of max(|y|, 0.1) are the expected rounding, where a wrong rewrite
// (a missing bias, a norm over the wrong axis) gives errors of order 1. The bound is 1e-2;
// measured: 1.7e-3, the same as the unpassed graph's own in f16 numerics.
TEST(Gpt2Block, Fp16GraphStaysWithinFp16Rounding) {
  Block b = make_block();
  const std::vector<Tensor> want = testing::run(b.graph, b.inputs());

  ir::Pipeline p;
  p.add(ir::bind_params_pass(b.params)).add(ir::fold_constants_pass()).add(legalize_pass()).add(ir::cse_pass());
  p.add(ir::dce_pass()).add(clamp_boundaries_pass()).add(to_fp16_pass());
  ir::Graph g = b.graph;
  const ir::PipelineResult r = p.run(g);
  for (const ir::Node& n : g.nodes())
    EXPECT_NE(n.type.dtype, DType::f32) << ir::describe(n) << " is still f32";
  // The causal mask's -inf above the diagonal (32 * 31 / 2 values) saturated to -65504.
  bool reported = false;
  for (const ir::Diagnostic& d : r.diagnostics) {
    std::cout << "[ info ] " << d.pass << ": " << d.message << "\n";
    if (d.message.starts_with("%causal_mask (const): of 1024 values, 496 saturated")) reported = true;
  }
  EXPECT_TRUE(reported);

  TensorMap x_only{{"x", b.x}};
  const double err = max_rel_error(want, testing::run(g, x_only, exec::Numerics::f16), 0.1);
  std::cout << "[ info ] f16 largest error " << err << "\n";
  EXPECT_LE(err, 1e-2);
  // The same graph before the passes, in the same numerics: the passes add little error of
  // their own beyond what fp16 storage costs anyway.
  const double err_unpassed = max_rel_error(want, testing::run(b.graph, b.inputs(), exec::Numerics::f16), 0.1);
  std::cout << "[ info ] f16 largest error of the original graph " << err_unpassed << "\n";
}

}  // namespace
}  // namespace orion::compile
