// legalize: each rewrite by its text, written by hand from the forms in docs/ane/FORMATS.md, and by
// its numbers: the graph before and after on the CPU executor.
#include <gtest/gtest.h>

#include <iostream>

#include "ir/transforms/cse.h"
#include "compile/passes/legalize.h"
#include "ir/builder.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::expect_text;
using testing::max_rel_error;
using testing::random_bindings;
using testing::run_pass;

int legal(ir::Graph& g) { return legalize(g); }

// sqrt(2/pi) = 0.79788456080286535...; the nearest float is 0.797884583..., whose shortest
// spelling is 0.7978846.
TEST(Legalize, GeluTanhForm) {
  bool changed = false;
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[2, 3]
  %y = gelu(%x) : f32[2, 3]
  return %y
}
)", [](ir::Graph& g) { return legal(g) == 1; }, &changed);
  EXPECT_TRUE(changed);
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 3]
  %y.x2 = mul(%x, %x) : f32[2, 3]
  %y.x3 = mul(%y.x2, %x) : f32[2, 3]
  %y.k_cubic = const() {value = [0.044715]} : f32[]
  %y.cx3 = mul(%y.x3, %y.k_cubic) : f32[2, 3]
  %y.inner = add(%x, %y.cx3) : f32[2, 3]
  %y.k_sqrt_2_over_pi = const() {value = [0.7978846]} : f32[]
  %y.u = mul(%y.inner, %y.k_sqrt_2_over_pi) : f32[2, 3]
  %y.tanh = tanh(%y.u) : f32[2, 3]
  %y.k_one = const() {value = [1]} : f32[]
  %y.tanh_1 = add(%y.tanh, %y.k_one) : f32[2, 3]
  %y.k_half = const() {value = [0.5]} : f32[]
  %y.half_x = mul(%x, %y.k_half) : f32[2, 3]
  %y = mul(%y.half_x, %y.tanh_1) : f32[2, 3]
  return %y
}
)");
}

// 2 sqrt(2/pi) = 1.5957691216057307...: nearest float 1.59576917..., spelled 1.5957692.
TEST(Legalize, GeluSigmoidForm) {
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[3]
  %y = gelu(%x) : f32[3]
  return %y
}
)", [](ir::Graph& g) { return legalize(g, {.gelu_form = GeluForm::sigmoid}); });
  expect_text(got, R"(graph g {
  %x = input() : f32[3]
  %y.x2 = mul(%x, %x) : f32[3]
  %y.x3 = mul(%y.x2, %x) : f32[3]
  %y.k_cubic = const() {value = [0.044715]} : f32[]
  %y.cx3 = mul(%y.x3, %y.k_cubic) : f32[3]
  %y.inner = add(%x, %y.cx3) : f32[3]
  %y.k_2_sqrt_2_over_pi = const() {value = [1.5957692]} : f32[]
  %y.u2 = mul(%y.inner, %y.k_2_sqrt_2_over_pi) : f32[3]
  %y.sigmoid = sigmoid(%y.u2) : f32[3]
  %y = mul(%x, %y.sigmoid) : f32[3]
  return %y
}
)");
}

TEST(Legalize, LayerNorm) {
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[2, 4]
  %gamma = param() : f32[4]
  %beta = param() : f32[4]
  %y = layer_norm(%x, %gamma, %beta) {epsilon = 1e-05} : f32[2, 4]
  return %y
}
)", legal);
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 4]
  %gamma = param() : f32[4]
  %beta = param() : f32[4]
  %y.mean = reduce_mean(%x) {axes = [1], keep_dims = true} : f32[2, 1]
  %y.centered = sub(%x, %y.mean) : f32[2, 4]
  %y.max = reduce_max(%y.centered) {axes = [1], keep_dims = true} : f32[2, 1]
  %y.k_minus_one = const() {value = [-1]} : f32[]
  %y.negated = mul(%y.centered, %y.k_minus_one) : f32[2, 4]
  %y.max_negated = reduce_max(%y.negated) {axes = [1], keep_dims = true} : f32[2, 1]
  %y.max_pos = relu(%y.max) : f32[2, 1]
  %y.max_negated_pos = relu(%y.max_negated) : f32[2, 1]
  %y.bound_sum = add(%y.max_pos, %y.max_negated_pos) : f32[2, 1]
  %y.k_tiny = const() {value = [6.1035156e-05]} : f32[]
  %y.bound = add(%y.bound_sum, %y.k_tiny) : f32[2, 1]
  %y.scaled = div(%y.centered, %y.bound) : f32[2, 4]
  %y.squared = mul(%y.scaled, %y.scaled) : f32[2, 4]
  %y.mean_square = reduce_mean(%y.squared) {axes = [1], keep_dims = true} : f32[2, 1]
  %y.k_sqrt_eps = const() {value = [0.0031622776]} : f32[]
  %y.eps_root = div(%y.k_sqrt_eps, %y.bound) : f32[2, 1]
  %y.eps_scaled = mul(%y.eps_root, %y.eps_root) : f32[2, 1]
  %y.mean_eps = add(%y.mean_square, %y.eps_scaled) : f32[2, 1]
  %y.k_rsqrt = const() {value = [-0.5]} : f32[]
  %y.rstd = pow(%y.mean_eps, %y.k_rsqrt) : f32[2, 1]
  %y.normed = mul(%y.scaled, %y.rstd) : f32[2, 4]
  %y.scaled_gain = mul(%y.normed, %gamma) : f32[2, 4]
  %y = add(%y.scaled_gain, %beta) : f32[2, 4]
  return %y
}
)");
}

TEST(Legalize, RmsNorm) {
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[3, 4]
  %w = param() : f32[4]
  %y = rms_norm(%x, %w) {epsilon = 1e-06} : f32[3, 4]
  return %y
}
)", legal);
  expect_text(got, R"(graph g {
  %x = input() : f32[3, 4]
  %w = param() : f32[4]
  %y.max = reduce_max(%x) {axes = [1], keep_dims = true} : f32[3, 1]
  %y.k_minus_one = const() {value = [-1]} : f32[]
  %y.negated = mul(%x, %y.k_minus_one) : f32[3, 4]
  %y.max_negated = reduce_max(%y.negated) {axes = [1], keep_dims = true} : f32[3, 1]
  %y.max_pos = relu(%y.max) : f32[3, 1]
  %y.max_negated_pos = relu(%y.max_negated) : f32[3, 1]
  %y.bound_sum = add(%y.max_pos, %y.max_negated_pos) : f32[3, 1]
  %y.k_tiny = const() {value = [6.1035156e-05]} : f32[]
  %y.bound = add(%y.bound_sum, %y.k_tiny) : f32[3, 1]
  %y.scaled = div(%x, %y.bound) : f32[3, 4]
  %y.squared = mul(%y.scaled, %y.scaled) : f32[3, 4]
  %y.mean_square = reduce_mean(%y.squared) {axes = [1], keep_dims = true} : f32[3, 1]
  %y.k_sqrt_eps = const() {value = [0.001]} : f32[]
  %y.eps_root = div(%y.k_sqrt_eps, %y.bound) : f32[3, 1]
  %y.eps_scaled = mul(%y.eps_root, %y.eps_root) : f32[3, 1]
  %y.mean_eps = add(%y.mean_square, %y.eps_scaled) : f32[3, 1]
  %y.k_rsqrt = const() {value = [-0.5]} : f32[]
  %y.rstd = pow(%y.mean_eps, %y.k_rsqrt) : f32[3, 1]
  %y.normed = mul(%y.scaled, %y.rstd) : f32[3, 4]
  %y = mul(%y.normed, %w) : f32[3, 4]
  return %y
}
)");
}

// The norms' expansions in fp16 numerics (every value stored as fp16, as on the ANE) against
// the fused ops in f32, on rows whose magnitudes span 1e-3 to 3000: squaring x itself would
// overflow fp16 (65504) from |x| > 256 and give inf or NaN; a trained model's residual stream
// reaches such values.
TEST(Legalize, NormsStayFiniteAndExactInFp16ForLargeAndSmallRows) {
  ir::Builder b("g");
  const std::int64_t C = 768;
  const ir::Value x = b.input("x", DType::f32, {4, C});
  const ir::Value gain = b.param("gain", DType::f32, {C});
  const ir::Value bias = b.param("bias", DType::f32, {C});
  b.output(b.name(b.rms_norm(x, gain, 1e-5), "rms"));
  b.output(b.name(b.layer_norm(x, gain, bias, 1e-5), "ln"));
  const ir::Graph fused = b.finish();
  ir::Graph expanded = fused;
  ASSERT_EQ(legalize(expanded), 2);
  TensorMap in = random_bindings(fused, 3, 0.5f, 1.5f);
  float* px = in["x"].data<float>();
  const float row_scale[4] = {1e-3f, 1.0f, 300.0f, 3000.0f};
  for (std::int64_t r = 0; r < 4; ++r)
    for (std::int64_t c = 0; c < C; ++c) px[r * C + c] = (px[r * C + c] - 1.0f) * 2.0f * row_scale[r];
  // Outputs are of order 1 (normalised, gains in [0.5, 1.5)): errors relative to max(|y|, 1),
  // against fp16's rounding of the output alone, 2^-10 of a value up to 4 or so.
  const double err = max_rel_error(testing::run(fused, in), testing::run(expanded, in, exec::Numerics::f16), 1.0);
  std::cout << "[ info ] fp16 norms, rows of magnitude 1e-3 to 3000: max error " << err << "\n";
  EXPECT_LT(err, 1e-2);
}

// In f16 the scalars are f16 too (binary ops need equal dtypes); sqrt stays.
TEST(Legalize, SiluNegRsqrtInF16) {
  const std::string got = run_pass(R"(graph g {
  %x = input() : f16[4]
  %a = silu(%x) : f16[4]
  %b = neg(%a) : f16[4]
  %c = rsqrt(%b) : f16[4]
  %d = sqrt(%c) : f16[4]
  return %d
}
)", legal);
  expect_text(got, R"(graph g {
  %x = input() : f16[4]
  %a.sigmoid = sigmoid(%x) : f16[4]
  %a = mul(%x, %a.sigmoid) : f16[4]
  %b.k_minus_one = const() {value = [-1]} : f16[]
  %b = mul(%a, %b.k_minus_one) : f16[4]
  %c.k_rsqrt = const() {value = [-0.5]} : f16[]
  %c = pow(%b, %c.k_rsqrt) : f16[4]
  %d = sqrt(%c) : f16[4]
  return %d
}
)");
}

TEST(Legalize, LeavesLegalGraphsAlone) {
  constexpr std::string_view legal_text = R"(graph g {
  %x = input() : f32[2, 3]
  %s = softmax(%x) {axis = -1} : f32[2, 3]
  %t = tanh(%s) : f32[2, 3]
  %c = concat(%t, %x) {axis = 0} : f32[4, 3]
  return %c
}
)";
  bool changed = true;
  EXPECT_EQ(run_pass(legal_text, [](ir::Graph& g) { return legal(g) > 0; }, &changed), legal_text);
  EXPECT_FALSE(changed);
}

// The scalars each expansion writes are separate constants; cse leaves one of each.
TEST(Legalize, CseSharesTheScalarsOfRepeatedExpansions) {
  ir::Graph g = testing::parse(R"(graph g {
  %x = input() : f32[3]
  %a = gelu(%x) : f32[3]
  %b = gelu(%a) : f32[3]
  return %b
}
)");
  ASSERT_EQ(legalize(g), 2);
  EXPECT_EQ(g.nodes_of(ir::Op::constant).size(), 8u);
  ASSERT_TRUE(cse(g));
  EXPECT_EQ(g.nodes_of(ir::Op::constant).size(), 4u);
  ir::verify(g);
}

// Numbers: every rewrite against the op it replaces on the CPU executor (f32), on random data.
struct NumericCase {
  const char* name;
  ir::Op op;
  float lo, hi;         // input range
  double tolerance;     // largest error (see max_rel_error) allowed
  double floor;
  GeluForm gelu_form = GeluForm::tanh;
};

ir::Graph one_op_graph(ir::Op op) {
  ir::Builder b("g");
  const ir::Value x = b.input("x", DType::f32, {16, 96});
  switch (op) {
    case ir::Op::layer_norm:
      b.output(b.layer_norm(x, b.param("g", DType::f32, {96}), b.param("b", DType::f32, {96}), 1e-5));
      break;
    case ir::Op::rms_norm: b.output(b.rms_norm(x, b.param("w", DType::f32, {96}), 1e-6)); break;
    default: b.output(b.op(op, {x})); break;
  }
  return b.finish();
}

TEST(Legalize, RewritesComputeTheSameNumbers) {
  // gelu (tanh form): 1 + tanh(u) cancels for negative x, so its error is absolute (below
  // 1e-6 for |x| <= 6), not relative: measured against max(|y|, 1) where the sigmoid form holds
  // 1e-5 relative down to 1e-6 (its values span e-8 in this range, measured against 1e-6 at
  // least: where the reference itself is rounding noise).
  const NumericCase cases[] = {
      {"gelu_tanh", ir::Op::gelu, -6, 6, 1e-6, 1.0},
      {"gelu_sigmoid", ir::Op::gelu, -6, 6, 1e-5, 1e-6, GeluForm::sigmoid},
      {"silu", ir::Op::silu, -8, 8, 1e-5, 1e-6},
      // Where gamma * normed + beta cancels to near 0, the error is that of the terms (~1e-7
      // of values ~1): relative above 1e-2, scaled absolute below.
      {"layer_norm", ir::Op::layer_norm, -3, 5, 1e-5, 1e-2},
      {"rms_norm", ir::Op::rms_norm, -3, 5, 1e-5, 1e-6},
      {"neg", ir::Op::neg, -3, 3, 0, 1e-6},
      {"rsqrt", ir::Op::rsqrt, 0.01f, 100, 1e-6, 1e-6},
  };
  for (const NumericCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ir::Graph before = one_op_graph(c.op);
    ir::Graph after = before;
    ASSERT_EQ(legalize(after, {.gelu_form = c.gelu_form}), 1);
    ASSERT_TRUE(after.nodes_of(c.op).empty());
    TensorMap in = random_bindings(before, 42, c.lo, c.hi);
    // Norm gains and biases as trained models have them (around 1 and 0): with gains of 5 and
    // biases of -3 the final multiply-add cancels and both sides lose the same digits.
    Rng rng(7);
    if (in.contains("g")) rng.fill_uniform(in["g"].span<float>(), 0.5f, 1.5f);
    if (in.contains("w")) rng.fill_uniform(in["w"].span<float>(), 0.5f, 1.5f);
    if (in.contains("b")) rng.fill_uniform(in["b"].span<float>(), -0.5f, 0.5f);
    const double err = max_rel_error(testing::run(before, in), testing::run(after, in), c.floor);
    EXPECT_LE(err, c.tolerance);
    std::cout << "[ info ] " << c.name << ": largest error " << err << "\n";
  }
}

}  // namespace
}  // namespace orion::compile
