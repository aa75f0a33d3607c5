// to_fp16 (weights saturate, types become f16) and clamp_boundaries (clamps where values cross
// between host and device).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compile/passes/clamp_boundaries.h"
#include "ir/transforms/pipeline.h"
#include "compile/passes/to_fp16.h"
#include "core/half.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::expect_text;
using testing::parse;
using testing::run_pass;

// 70000 and 65520 (the midpoint where fp16 rounding goes to inf) and -inf saturate; 65519
// rounds to 65504 by itself; 1e-8 is below half the smallest fp16 subnormal (2^-24 = 5.96e-8)
// and becomes 0; 0.1 rounds; NaN and -0 keep themselves.
TEST(ToFp16, ConvertsWeightsWithSaturationAndRetypesEverything) {
  Fp16Stats stats;
  bool changed = false;
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[7]
  %tok = input() : i32[7]
  %w = const() {value = [70000, -inf, 65520, 65519, 1e-08, 0.1, nan]} : f32[7]
  %z = const() {value = [-0, 1]} : f32[2]
  %b = const() {value = [0.5]} : bf16[]
  %h = mul(%x, %w) : f32[7]
  %t = cast(%tok) {dtype = f32} : f32[7]
  %y = add(%h, %t) : f32[7]
  return %y, %z, %b
}
)", [&](ir::Graph& g) { stats = to_fp16(g); return stats.retyped > 0; }, &changed);
  EXPECT_TRUE(changed);
  expect_text(got, R"(graph g {
  %x = input() : f16[7]
  %tok = input() : i32[7]
  %w = const() {value = [65504, -65504, 65504, 65504, 0, 0.099975586, nan]} : f16[7]
  %z = const() {value = [-0, 1]} : f16[2]
  %b = const() {value = [0.5]} : bf16[]
  %h = mul(%x, %w) : f16[7]
  %t = cast(%tok) {dtype = f16} : f16[7]
  %y = add(%h, %t) : f16[7]
  return %y, %z, %b
}
)");
  EXPECT_EQ(stats.constants, 2);
  EXPECT_EQ(stats.values, 9);
  EXPECT_EQ(stats.saturated, 3);
  EXPECT_EQ(stats.infinite, 1);
  EXPECT_EQ(stats.flushed, 1);
  EXPECT_EQ(stats.retyped, 6);  // x, w, z, h, t, y
  ASSERT_EQ(stats.notes.size(), 1u);
  EXPECT_EQ(stats.notes[0], "%w (const): of 7 values, 3 saturated to +-65504 (1 of them infinite), 1 became zero");
}

TEST(ToFp16, SaturatedBitsAreTheLargestFiniteHalves) {
  Fp16Stats s;
  const Tensor t = saturate_to_fp16(
      Tensor::from_floats({4}, std::vector<float>{std::numeric_limits<float>::infinity(), -1e30f,
                                                  std::numeric_limits<float>::quiet_NaN(), -65504}),
      s);
  const auto h = t.span<std::uint16_t>();
  EXPECT_EQ(h[0], 0x7BFF);
  EXPECT_EQ(h[1], 0xFBFF);
  EXPECT_TRUE(std::isnan(half_to_float(h[2])));
  EXPECT_EQ(h[3], 0xFBFF);
  EXPECT_EQ(s.saturated, 2);
}

TEST(ToFp16, PassReportsThroughThePipeline) {
  ir::Pipeline p;
  p.add(to_fp16_pass());
  ir::Graph g = parse(R"(graph g {
  %x = input() : f32[2]
  %m = const() {value = [0, -inf]} : f32[2]
  %y = add(%x, %m) : f32[2]
  return %y
}
)");
  const ir::PipelineResult r = p.run(g);
  ASSERT_EQ(r.diagnostics.size(), 2u);
  EXPECT_EQ(r.diagnostics[0].pass, "to_fp16");
  EXPECT_EQ(r.diagnostics[0].message,
            "%m (const): of 2 values, 1 saturated to +-65504 (1 of them infinite), 0 became zero");
  EXPECT_EQ(r.diagnostics[1].message,
            "1 constants (2 values) to fp16: 1 saturated to +-65504 (1 of them infinite), 0 became zero");
}

constexpr std::string_view kBoundaries = R"(graph g {
  %x = input() : f32[4]
  %tok = input() : i32[4]
  %passthrough = input() : f32[2]
  %unread = input() : f32[2]
  %e = exp(%x) : f32[4]
  %s = sigmoid(%e) : f32[4]
  %n = tanh(%e) : f32[4]
  %k = clamp(%e) {min = -1.0, max = 1.0} : f32[4]
  %w = clamp(%e) {min = -1e+05, max = 1.0} : f32[4]
  %c = const() {value = [1, 2, 3, 4]} : f32[4]
  %t = cast(%tok) {dtype = f32} : f32[4]
  %y = add(%s, %t) : f32[4]
  return %e, %s, %n, %k, %w, %c, %passthrough, %y, %e
}
)";

// %x is read: clamped on entry. %passthrough and %unread are not read by any op. %e leaves
// (twice) through one clamp that takes its name, while %s and %n keep reading the unclamped
// value; bounded ops and constants leave as they are; %w's clamp is wider than fp16.
TEST(ClampBoundaries, ClampsInputsAndUnboundedOutputs) {
  ClampCounts counts;
  const std::string got = run_pass(kBoundaries, [&](ir::Graph& g) {
    counts = clamp_boundaries(g);
    return true;
  });
  EXPECT_EQ(counts.inputs, 1);
  EXPECT_EQ(counts.outputs, 3);
  expect_text(got, R"(graph g {
  %x = input() : f32[4]
  %x.clamped = clamp(%x) {min = -65504.0, max = 65504.0} : f32[4]
  %tok = input() : i32[4]
  %passthrough = input() : f32[2]
  %unread = input() : f32[2]
  %e.unclamped = exp(%x.clamped) : f32[4]
  %e = clamp(%e.unclamped) {min = -65504.0, max = 65504.0} : f32[4]
  %s = sigmoid(%e.unclamped) : f32[4]
  %n = tanh(%e.unclamped) : f32[4]
  %k = clamp(%e.unclamped) {min = -1.0, max = 1.0} : f32[4]
  %w.unclamped = clamp(%e.unclamped) {min = -1e+05, max = 1.0} : f32[4]
  %w = clamp(%w.unclamped) {min = -65504.0, max = 65504.0} : f32[4]
  %c = const() {value = [1, 2, 3, 4]} : f32[4]
  %t = cast(%tok) {dtype = f32} : f32[4]
  %y.unclamped = add(%s, %t) : f32[4]
  %y = clamp(%y.unclamped) {min = -65504.0, max = 65504.0} : f32[4]
  return %e, %s, %n, %k, %w, %c, %passthrough, %y, %e
}
)");
}

TEST(ClampBoundaries, IsIdempotent) {
  ir::Graph g = parse(kBoundaries);
  clamp_boundaries(g);
  const std::string once = ir::print_graph(g);
  const ClampCounts again = clamp_boundaries(g);
  EXPECT_EQ(again.inputs + again.outputs, 0);
  EXPECT_EQ(ir::print_graph(g), once);
}

// What the clamps are for: an input beyond fp16 arrives as inf in fp16 numerics; clamped, the
// graph gives finite values, and values within range are unchanged.
TEST(ClampBoundaries, TurnsInfinitiesAtTheBoundaryIntoTheLargestHalf) {
  const std::string_view text = R"(graph g {
  %x = input() : f32[3]
  %y = mul(%x, %x) : f32[3]
  %z = sub(%y, %y) : f32[3]
  return %y, %z
}
)";
  ir::Graph plain = parse(text);
  ir::Graph clamped = parse(text);
  clamp_boundaries(clamped);
  TensorMap in;
  in["x"] = Tensor::from_floats({3}, std::vector<float>{1e5f, 2, -3});
  const auto a = testing::run(plain, in, exec::Numerics::f16);
  const auto b = testing::run(clamped, in, exec::Numerics::f16);
  EXPECT_TRUE(std::isinf(a[0].to_floats()[0]));
  EXPECT_TRUE(std::isnan(a[1].to_floats()[0]));  // inf - inf
  EXPECT_EQ(b[0].to_floats(), (std::vector<float>{65504, 4, 9}));
  EXPECT_TRUE(std::isnan(b[1].to_floats()[0]));  // inside the graph 65504^2 still overflows
  EXPECT_EQ(b[1].to_floats()[1], 0.0f);
}

}  // namespace
}  // namespace orion::compile
