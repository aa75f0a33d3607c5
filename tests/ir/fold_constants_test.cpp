// fold_constants: nodes of constants become constants, chains at once; the evaluator agrees
// with the CPU executor on every op it folds.
#include <gtest/gtest.h>

#include "ir/transforms/const_eval.h"
#include "ir/transforms/fold_constants.h"
#include "core/random.h"
#include "ir/builder.h"
#include "ir/ir_test_util.h"
#include "transform_test_util.h"

namespace orion::ir {
namespace {

using testing::expect_text;
using testing::run_pass;

int fold(ir::Graph& g) { return fold_constants(g); }

// A weight put into conv's layout: transposed, given two unit axes, and sent through fp16 and
// back (0.1 is not an fp16 value: it reads back as 0.0999755859375).
TEST(Fold, TransposeReshapeCastChainOfAWeight) {
  bool changed = false;
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[2, 3]
  %w = const() {value = [1, 2, 3, 4, 5, 0.1]} : f32[3, 2]
  %wt = transpose(%w) {perm = [1, 0]} : f32[2, 3]
  %w4 = reshape(%wt) {shape = [2, 3, 1, 1]} : f32[2, 3, 1, 1]
  %wh = cast(%w4) {dtype = f16} : f16[2, 3, 1, 1]
  %wf = cast(%wh) {dtype = f32} : f32[2, 3, 1, 1]
  %w2 = reshape(%wf) {shape = [2, -1]} : f32[2, 3]
  %y = add(%x, %w2) : f32[2, 3]
  return %y
}
)", [](ir::Graph& g) { return fold(g) > 0; }, &changed);
  EXPECT_TRUE(changed);
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 3]
  %w = const() {value = [1, 2, 3, 4, 5, 0.1]} : f32[3, 2]
  %wt = const() {value = [1, 3, 5, 2, 4, 0.1]} : f32[2, 3]
  %w4 = const() {value = [1, 3, 5, 2, 4, 0.1]} : f32[2, 3, 1, 1]
  %wh = const() {value = [1, 3, 5, 2, 4, 0.099975586]} : f16[2, 3, 1, 1]
  %wf = const() {value = [1, 3, 5, 2, 4, 0.099975586]} : f32[2, 3, 1, 1]
  %w2 = const() {value = [1, 3, 5, 2, 4, 0.099975586]} : f32[2, 3]
  %y = add(%x, %w2) : f32[2, 3]
  return %y
}
)");
}

TEST(Fold, ElementwiseSliceConcatClamp) {
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[3, 2]
  %a = const() {value = [1, 2, 3, 4]} : f32[2, 2]
  %b = const() {value = [10, 20]} : f32[2]
  %s = add(%a, %b) : f32[2, 2]
  %n = neg(%s) : f32[2, 2]
  %sl = slice(%n) {begin = [1, 0], end = [2, 2]} : f32[1, 2]
  %cc = concat(%sl, %a) {axis = 0} : f32[3, 2]
  %cl = clamp(%cc) {min = -20.0, max = 3.5} : f32[3, 2]
  %side = concat(%a, %a) {axis = 1} : f32[2, 4]
  %y = mul(%x, %cl) : f32[3, 2]
  return %y, %side
}
)", fold);
  // a + b = [[11, 22], [13, 24]]; its second row negated, then a below it, clamped.
  expect_text(got, R"(graph g {
  %x = input() : f32[3, 2]
  %a = const() {value = [1, 2, 3, 4]} : f32[2, 2]
  %b = const() {value = [10, 20]} : f32[2]
  %s = const() {value = [11, 22, 13, 24]} : f32[2, 2]
  %n = const() {value = [-11, -22, -13, -24]} : f32[2, 2]
  %sl = const() {value = [-13, -24]} : f32[1, 2]
  %cc = const() {value = [-13, -24, 1, 2, 3, 4]} : f32[3, 2]
  %cl = const() {value = [-13, -20, 1, 2, 3, 3.5]} : f32[3, 2]
  %side = const() {value = [1, 2, 1, 2, 3, 4, 3, 4]} : f32[2, 4]
  %y = mul(%x, %cl) : f32[3, 2]
  return %y, %side
}
)");
}

TEST(Fold, LeavesGrowingBroadcastsAndUnknownOpsAlone) {
  constexpr std::string_view before = R"(graph g {
  %col = const() {value = [1, 2]} : f32[2, 1]
  %row = const() {value = [1, 2, 3]} : f32[1, 3]
  %outer = mul(%col, %row) : f32[2, 3]
  %m = matmul(%col, %row) {transpose_x = false, transpose_y = false} : f32[2, 3]
  %r = reduce_sum(%row) {axes = [1], keep_dims = false} : f32[1]
  return %outer, %m, %r
}
)";
  bool changed = true;
  EXPECT_EQ(run_pass(before, [](ir::Graph& g) { return fold(g) > 0; }, &changed), before);
  EXPECT_FALSE(changed);
  // A scalar times a matrix does not grow: folded.
  const std::string got = run_pass(R"(graph g {
  %k = const() {value = [2]} : f32[]
  %w = const() {value = [1, 2, 3]} : f32[1, 3]
  %y = mul(%k, %w) : f32[1, 3]
  return %y
}
)", fold);
  expect_text(got, R"(graph g {
  %k = const() {value = [2]} : f32[]
  %w = const() {value = [1, 2, 3]} : f32[1, 3]
  %y = const() {value = [2, 4, 6]} : f32[1, 3]
  return %y
}
)");
}

TEST(Fold, IntegerCastsSaturateWithoutGoingThroughFloat) {
  const std::string got = run_pass(R"(graph g {
  %i = const() {value = [16777217, -300, 200]} : i32[3]
  %b = cast(%i) {dtype = i8} : i8[3]
  %u = cast(%i) {dtype = u8} : u8[3]
  %f = cast(%i) {dtype = f32} : f32[3]
  return %b, %u, %f
}
)", fold);
  expect_text(got, R"(graph g {
  %i = const() {value = [16777217, -300, 200]} : i32[3]
  %b = const() {value = [127, -128, 127]} : i8[3]
  %u = const() {value = [255, 0, 200]} : u8[3]
  %f = const() {value = [16777216, -300, 200]} : f32[3]
  return %b, %u, %f
}
)");
}

// Every op the evaluator folds, on random constants, against the executor running the
// unfolded graph: the same value bit for bit (same formulas, fp32 arithmetic) in f32 and f16.
TEST(Fold, AgreesWithTheCpuExecutorOnEveryFoldedOp) {
  int checked = 0;
  for (const ir::OpInfo& info : ir::all_ops()) {
    if (!ir::can_evaluate(info.op)) continue;
    for (DType dt : {DType::f32, DType::f16}) {
      SCOPED_TRACE(std::string(info.name) + " " + std::string(dtype_name(dt)));
      Rng rng(static_cast<std::uint64_t>(info.op) * 7 + (dt == DType::f16));
      auto random_const = [&](ir::Builder& b, Shape shape, float lo, float hi) {
        Tensor t(DType::f32, shape);
        rng.fill_uniform(t.span<float>(), lo, hi);
        return b.constant(dt == DType::f32 ? t : t.to(dt));
      };
      ir::Builder b("g");
      const bool positive = info.op == ir::Op::log || info.op == ir::Op::sqrt ||
                            info.op == ir::Op::rsqrt || info.op == ir::Op::pow;
      const ir::Value x = random_const(b, {3, 4}, positive ? 0.1f : -4, 4);
      switch (info.cls) {
        case ir::OpClass::binary: b.output(b.op(info.op, {x, random_const(b, {4}, -2, 2)})); break;
        case ir::OpClass::unary: b.output(b.op(info.op, {x})); break;
        default:
          switch (info.op) {
            case ir::Op::reshape: b.output(b.reshape(x, {2, 6})); break;
            case ir::Op::transpose: b.output(b.transpose(x, {1, 0})); break;
            case ir::Op::slice: b.output(b.slice(x, {1, 1}, {3, 3})); break;
            case ir::Op::concat: b.output(b.concat({x, random_const(b, {3, 2}, -1, 1), x}, 1)); break;
            case ir::Op::cast: b.output(b.cast(x, dt == DType::f32 ? DType::f16 : DType::f32)); break;
            case ir::Op::clamp: b.output(b.clamp(x, -1.5, 2.25)); break;
            default: FAIL() << "no test graph for a foldable op";
          }
      }
      ir::Graph g = b.finish();
      const std::vector<Tensor> want = testing::run(g, {});
      ASSERT_EQ(fold_constants(g), 1);
      const Tensor& got = g.node(g.outputs()[0]).attr<Tensor>("value");
      EXPECT_TRUE(ir::testing::same_tensor(want[0], got));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 21);  // every op can_evaluate accepts, in both dtypes
}

}  // namespace
}  // namespace orion::ir
