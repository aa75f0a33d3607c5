// lower_layout: each rule by its text, written by hand from the table in lower_layout.h, and by
// its numbers: the graph before (token-major) and after ([1, C, 1, S]) on the CPU executor,
// the input transposed into the ANE's layout and the output transposed back here.
#include <gtest/gtest.h>

#include "compile/passes/lower_layout.h"
#include "compile/mil_test_util.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::expect_text;
using testing::max_rel_error;
using testing::run_pass;

bool lower(ir::Graph& g) { return lower_layout(g).lowered > 0; }

// [S, X] -> [1, X, 1, S], written as loops so that the check does not share the pass's code.
Tensor to_channel_major(const Tensor& t) {
  const std::int64_t S = t.shape()[0], X = t.shape()[1];
  const std::vector<float> v = t.to_floats();
  std::vector<float> out(v.size());
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t x = 0; x < X; ++x) out[static_cast<std::size_t>(x * S + s)] = v[static_cast<std::size_t>(s * X + x)];
  return Tensor::from_floats({1, X, 1, S}, out);
}

Tensor to_token_major(const Tensor& t) {
  const std::int64_t X = t.shape()[1], S = t.shape()[3];
  const std::vector<float> v = t.to_floats();
  std::vector<float> out(v.size());
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t x = 0; x < X; ++x) out[static_cast<std::size_t>(s * X + x)] = v[static_cast<std::size_t>(x * S + s)];
  return Tensor::from_floats({S, X}, out);
}

// Runs `before` and its lowering on the same seeded input; returns the largest relative error.
double lowered_error(const std::string& before) {
  ir::Graph g = testing::parse(before);
  const TensorMap in = testing::random_bindings(g, 5, -2, 2);
  const std::vector<Tensor> want = testing::run(g, in);
  EXPECT_TRUE(lower(g));
  TensorMap lowered_in;
  for (const auto& [name, t] : in) lowered_in.emplace(name, to_channel_major(t));
  std::vector<Tensor> got = testing::run(g, lowered_in);
  for (Tensor& t : got) t = to_token_major(t);
  return max_rel_error(want, got, 1e-3);
}

const char* kLinear = R"(graph g {
  %x = input() : f32[4, 3]
  %w = const() {value = [1, 2, 3, 4, 5, 6]} : f32[3, 2]
  %b = const() {value = [0.5, -0.5]} : f32[2]
  %mm = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[4, 2]
  %y = add(%mm, %b) : f32[4, 2]
  %m = reduce_mean(%y) {axes = [1], keep_dims = true} : f32[4, 1]
  %z = sub(%y, %m) : f32[4, 2]
  %e = exp(%z) : f32[4, 2]
  return %e
}
)";

// The weight [C, N] = [[1, 2], [3, 4], [5, 6]] becomes conv's [N, C, 1, 1] = its transpose; the
// bias broadcasts as [1, N, 1, 1]; the channel reduction stays on axis 1.
TEST(LowerLayout, LinearLayerBecomesConvWithBiasAndChannelReduction) {
  expect_text(run_pass(kLinear, lower), R"(graph g {
  %x = input() : f32[1, 3, 1, 4]
  %w = const() {value = [1, 2, 3, 4, 5, 6]} : f32[3, 2]
  %b = const() {value = [0.5, -0.5]} : f32[2]
  %w.conv = const() {value = [1, 3, 5, 2, 4, 6]} : f32[2, 3, 1, 1]
  %mm = conv(%x, %w.conv) {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1} : f32[1, 2, 1, 4]
  %b.ane = const() {value = [0.5, -0.5]} : f32[1, 2, 1, 1]
  %y = add(%mm, %b.ane) : f32[1, 2, 1, 4]
  %m = reduce_mean(%y) {axes = [1], keep_dims = true} : f32[1, 1, 1, 4]
  %z = sub(%y, %m) : f32[1, 2, 1, 4]
  %e = exp(%z) : f32[1, 2, 1, 4]
  return %e
}
)");
  EXPECT_LE(lowered_error(kLinear), 1e-6);
}

const char* kAttention = R"(graph g {
  %x = input() : f32[4, 8]
  %q = slice(%x) {begin = [0, 0], end = [4, 4]} : f32[4, 4]
  %k = slice(%x) {begin = [0, 4], end = [4, 8]} : f32[4, 4]
  %qs = reshape(%q) {shape = [4, 2, 2]} : f32[4, 2, 2]
  %qh = transpose(%qs) {perm = [1, 0, 2]} : f32[2, 4, 2]
  %ks = reshape(%k) {shape = [4, 2, 2]} : f32[4, 2, 2]
  %kh = transpose(%ks) {perm = [1, 0, 2]} : f32[2, 4, 2]
  %s = matmul(%qh, %kh) {transpose_x = false, transpose_y = true} : f32[2, 4, 4]
  %k_scale = const() {value = [0.5]} : f32[]
  %ss = mul(%s, %k_scale) : f32[2, 4, 4]
  %mask = const() {value = [0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0]} : f32[4, 4]
  %sm = add(%ss, %mask) : f32[2, 4, 4]
  %p = softmax(%sm) {axis = -1} : f32[2, 4, 4]
  %o = matmul(%p, %kh) {transpose_x = false, transpose_y = false} : f32[2, 4, 2]
  %ot = transpose(%o) {perm = [1, 0, 2]} : f32[4, 2, 2]
  %y = reshape(%ot) {shape = [4, 4]} : f32[4, 4]
  return %y
}
)";

// Heads: channel slices, reshape [1, C, 1, S] -> [1, H, D, S], the one permutation [0, 1, 3, 2]
// to [1, H, S, D], the mask as [1, 1, S, S], softmax over the last axis, and the way back; the
// matmuls read k's head split [1, H, D, S] with transpose_y flipped instead of its transpose
// (dce drops %kh later): q k^T is q @ ks, probs @ k is probs @ ks^T.
TEST(LowerLayout, AttentionSplitsHeadsOnTheChannelAxis) {
  expect_text(run_pass(kAttention, lower), R"(graph g {
  %x = input() : f32[1, 8, 1, 4]
  %q = slice(%x) {begin = [0, 0, 0, 0], end = [1, 4, 1, 4]} : f32[1, 4, 1, 4]
  %k = slice(%x) {begin = [0, 4, 0, 0], end = [1, 8, 1, 4]} : f32[1, 4, 1, 4]
  %qs = reshape(%q) {shape = [1, 2, 2, 4]} : f32[1, 2, 2, 4]
  %qh = transpose(%qs) {perm = [0, 1, 3, 2]} : f32[1, 2, 4, 2]
  %ks = reshape(%k) {shape = [1, 2, 2, 4]} : f32[1, 2, 2, 4]
  %kh = transpose(%ks) {perm = [0, 1, 3, 2]} : f32[1, 2, 4, 2]
  %s = matmul(%qh, %ks) {transpose_x = false, transpose_y = false} : f32[1, 2, 4, 4]
  %k_scale = const() {value = [0.5]} : f32[]
  %ss = mul(%s, %k_scale) : f32[1, 2, 4, 4]
  %mask = const() {value = [0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0]} : f32[4, 4]
  %mask.ane = const() {value = [0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0]} : f32[1, 1, 4, 4]
  %sm = add(%ss, %mask.ane) : f32[1, 2, 4, 4]
  %p = softmax(%sm) {axis = 3} : f32[1, 2, 4, 4]
  %o = matmul(%p, %ks) {transpose_x = false, transpose_y = true} : f32[1, 2, 4, 2]
  %ot = transpose(%o) {perm = [0, 1, 3, 2]} : f32[1, 2, 2, 4]
  %y = reshape(%ot) {shape = [1, 4, 1, 4]} : f32[1, 4, 1, 4]
  return %y
}
)");
  EXPECT_LE(lowered_error(kAttention), 1e-6);
}

// A const operand [S, X] (not a broadcast) is transposed with its data; a shared const is
// converted once.
TEST(LowerLayout, FullConstOperandIsTransposedOnce) {
  const char* before = R"(graph g {
  %x = input() : f32[2, 3]
  %c = const() {value = [1, 2, 3, 4, 5, 6]} : f32[2, 3]
  %a = add(%x, %c) : f32[2, 3]
  %y = mul(%a, %c) : f32[2, 3]
  return %y
}
)";
  expect_text(run_pass(before, lower), R"(graph g {
  %x = input() : f32[1, 3, 1, 2]
  %c = const() {value = [1, 2, 3, 4, 5, 6]} : f32[2, 3]
  %c.ane = const() {value = [1, 4, 2, 5, 3, 6]} : f32[1, 3, 1, 2]
  %a = add(%x, %c.ane) : f32[1, 3, 1, 2]
  %y = mul(%a, %c.ane) : f32[1, 3, 1, 2]
  return %y
}
)");
  EXPECT_LE(lowered_error(before), 1e-6);
}

TEST(LowerLayout, RefusesWhatItCannotLowerNamingTheNode) {
  ir::Graph concat = testing::parse(R"(graph g {
  %x = input() : f32[2, 3]
  %y = concat(%x, %x) {axis = 0} : f32[4, 3]
  return %y
}
)");
  EXPECT_NE(testing::error_of([&] { lower_layout(concat); }).find("%y (concat)"), std::string::npos);
  ir::Graph runtime_weight = testing::parse(R"(graph g {
  %x = input() : f32[2, 3]
  %w = input() : f32[2, 3]
  %y = matmul(%x, %w) {transpose_x = false, transpose_y = true} : f32[2, 2]
  return %y
}
)");
  EXPECT_NE(testing::error_of([&] { lower_layout(runtime_weight); }).find("runtime weights"), std::string::npos);
  ir::Graph rank3 = testing::parse(R"(graph g {
  %x = input() : f32[2, 3, 4]
  %y = exp(%x) : f32[2, 3, 4]
  return %y
}
)");
  EXPECT_NE(testing::error_of([&] { lower_layout(rank3); }).find("[S, X]"), std::string::npos);
}

}  // namespace
}  // namespace orion::compile
