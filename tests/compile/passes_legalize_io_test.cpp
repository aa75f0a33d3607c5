// legalize_io: the padded sequence length from the surface rules, the rewrite by its text
// (written by hand from legalize_io.h), and by its numbers: the real tokens' results before
// and after padding, with zeros in the padded columns as the host packs them.
#include <gtest/gtest.h>

#include <limits>

#include "compile/mil_test_util.h"
#include "compile/passes/legalize_io.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::expect_text;
using testing::max_rel_error;

// 49,152 bytes / (64 channels * 2 bytes) = 384 columns; 768 channels need 32 (the 64-byte
// minimum of the last axis, ANE011); real tokens round up to the bucket of 32.
TEST(LegalizeIo, PaddedSequenceMeetsEverySurfaceRule) {
  EXPECT_EQ(padded_sequence(32, 64), 384);
  EXPECT_EQ(padded_sequence(400, 64), 416);
  EXPECT_EQ(padded_sequence(64, 768), 64);
  EXPECT_EQ(padded_sequence(1, 768), 32);
  EXPECT_EQ(padded_sequence(33, 768), 64);
  EXPECT_EQ(padded_sequence(5, 7, {.seq_multiple = 6, .min_surface_bytes = 0}), 6);
}

const char* kKernel = R"(graph g {
  %x = input() : f32[1, 4, 1, 4]
  %h = slice(%x) {begin = [0, 2, 0, 0], end = [1, 4, 1, 4]} : f32[1, 2, 1, 4]
  %m = reduce_mean(%h) {axes = [1], keep_dims = true} : f32[1, 1, 1, 4]
  %c = sub(%h, %m) : f32[1, 2, 1, 4]
  %hs = reshape(%c) {shape = [1, 1, 2, 4]} : f32[1, 1, 2, 4]
  %q = transpose(%hs) {perm = [0, 1, 3, 2]} : f32[1, 1, 4, 2]
  %s = matmul(%q, %q) {transpose_x = false, transpose_y = true} : f32[1, 1, 4, 4]
  %mask = const() {value = [0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0]} : f32[1, 1, 4, 4]
  %sm = add(%s, %mask) : f32[1, 1, 4, 4]
  %p = softmax(%sm) {axis = 3} : f32[1, 1, 4, 4]
  %o = matmul(%p, %q) {transpose_x = false, transpose_y = false} : f32[1, 1, 4, 2]
  %ot = transpose(%o) {perm = [0, 1, 3, 2]} : f32[1, 1, 2, 4]
  %y = reshape(%ot) {shape = [1, 2, 1, 4]} : f32[1, 2, 1, 4]
  return %y
}
)";

const LegalizeIoOptions kSmallIo{.seq_multiple = 6, .min_surface_bytes = 0};

// S = 4 padded to 6: full slices of the sequence stay full, the head reshape keeps S last, the
// mask grows with -inf for real queries on padded keys and a causal pattern for padded rows.
TEST(LegalizeIo, PadsTheSequenceAndExtendsTheMask) {
  KernelIo io;
  const std::string got = testing::run_pass(kKernel, [&](ir::Graph& g) {
    io = legalize_io(g, kSmallIo);
    return true;
  });
  expect_text(got, R"(graph g {
  %x = input() : f32[1, 4, 1, 6]
  %h = slice(%x) {begin = [0, 2, 0, 0], end = [1, 4, 1, 6]} : f32[1, 2, 1, 6]
  %m = reduce_mean(%h) {axes = [1], keep_dims = true} : f32[1, 1, 1, 6]
  %c = sub(%h, %m) : f32[1, 2, 1, 6]
  %hs = reshape(%c) {shape = [1, 1, 2, 6]} : f32[1, 1, 2, 6]
  %q = transpose(%hs) {perm = [0, 1, 3, 2]} : f32[1, 1, 6, 2]
  %s = matmul(%q, %q) {transpose_x = false, transpose_y = true} : f32[1, 1, 6, 6]
  %mask = const() {value = [0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0]} : f32[1, 1, 4, 4]
  %mask.padded = const() {value = [0, -inf, -inf, -inf, -inf, -inf, 0, 0, -inf, -inf, -inf, -inf, 0, 0, 0, -inf, -inf, -inf, 0, 0, 0, 0, -inf, -inf, 0, 0, 0, 0, 0, -inf, 0, 0, 0, 0, 0, 0]} : f32[1, 1, 6, 6]
  %sm = add(%s, %mask.padded) : f32[1, 1, 6, 6]
  %p = softmax(%sm) {axis = 3} : f32[1, 1, 6, 6]
  %o = matmul(%p, %q) {transpose_x = false, transpose_y = false} : f32[1, 1, 6, 2]
  %ot = transpose(%o) {perm = [0, 1, 3, 2]} : f32[1, 1, 2, 6]
  %y = reshape(%ot) {shape = [1, 2, 1, 6]} : f32[1, 2, 1, 6]
  return %y
}
)");
  EXPECT_EQ(io.seq, 4);
  EXPECT_EQ(io.padded_seq, 6);
  ASSERT_EQ(io.inputs.size(), 1u);
  ASSERT_EQ(io.outputs.size(), 1u);
  EXPECT_EQ(io.inputs[0].name, "x");
  EXPECT_EQ(io.inputs[0].logical, (Shape{1, 4, 1, 4}));
  EXPECT_EQ(io.inputs[0].padded, (Shape{1, 4, 1, 6}));
  EXPECT_EQ(io.input_bytes, 4 * 6 * 2);
  EXPECT_EQ(io.output_bytes, 2 * 6 * 2);
}

// The real columns compute what they computed unpadded (bit for bit is not promised: only
// exact zeros are added, but the executor may sum in another order), whatever the padded
// columns hold... as long as it is finite: the host packs zeros.
TEST(LegalizeIo, RealTokensKeepTheirResults) {
  ir::Graph g = testing::parse(kKernel);
  const TensorMap in = testing::random_bindings(g, 3, -2, 2);
  const std::vector<Tensor> want = testing::run(g, in);
  legalize_io(g, kSmallIo);
  const std::vector<float> x = in.at("x").to_floats();
  std::vector<float> padded(4 * 6, 0.0f);
  for (int c = 0; c < 4; ++c)
    for (int s = 0; s < 4; ++s) padded[static_cast<std::size_t>(c * 6 + s)] = x[static_cast<std::size_t>(c * 4 + s)];
  const std::vector<float> y = testing::run(g, {{"x", Tensor::from_floats({1, 4, 1, 6}, padded)}})[0].to_floats();
  std::vector<float> real;
  for (int c = 0; c < 2; ++c)
    for (int s = 0; s < 4; ++s) real.push_back(y[static_cast<std::size_t>(c * 6 + s)]);
  EXPECT_LE(max_rel_error(want, {Tensor::from_floats({1, 2, 1, 4}, real)}, 1e-3), 1e-6);
}

TEST(LegalizeIo, RefusesWhatPaddingWouldChange) {
  ir::Graph over_seq = testing::parse(R"(graph g {
  %x = input() : f32[1, 4, 1, 4]
  %y = reduce_sum(%x) {axes = [3], keep_dims = true} : f32[1, 4, 1, 1]
  %z = add(%x, %y) : f32[1, 4, 1, 4]
  return %z
}
)");
  EXPECT_NE(testing::error_of([&] { legalize_io(over_seq, kSmallIo); }).find("%y (reduce_sum)"), std::string::npos);
  ir::Graph unmasked = testing::parse(R"(graph g {
  %x = input() : f32[1, 4, 1, 4]
  %y = softmax(%x) {axis = 3} : f32[1, 4, 1, 4]
  return %y
}
)");
  EXPECT_NE(testing::error_of([&] { legalize_io(unmasked, kSmallIo); }).find("no extended causal mask"),
            std::string::npos);
  ir::Graph two_sizes = testing::parse(R"(graph g {
  %a = input() : f32[1, 4, 1, 4]
  %b = input() : f32[1, 2, 1, 4]
  %y = mul(%a, %a) : f32[1, 4, 1, 4]
  %z = mul(%b, %b) : f32[1, 2, 1, 4]
  return %y, %z
}
)");
  EXPECT_NO_THROW(legalize_io(two_sizes, kSmallIo));
}

// Surfaces of one direction with different channel counts share the largest allocation
// (ANE010); each tensor keeps its own packed size, which the device reads from the start.
TEST(LegalizeIo, OneAllocationPerDirectionIsTheLargest) {
  ir::Graph g = testing::parse(R"(graph g {
  %a = input() : f32[1, 4, 1, 4]
  %b = input() : f32[1, 2, 1, 4]
  %y = mul(%a, %a) : f32[1, 4, 1, 4]
  %z = mul(%b, %b) : f32[1, 2, 1, 4]
  return %z, %y
}
)");
  const KernelIo io = legalize_io(g, kSmallIo);
  ASSERT_EQ(io.inputs.size(), 2u);
  EXPECT_EQ(io.inputs[0].bytes, 4 * io.padded_seq * 2);
  EXPECT_EQ(io.inputs[1].bytes, 2 * io.padded_seq * 2);
  EXPECT_EQ(io.input_bytes, io.inputs[0].bytes);
  EXPECT_EQ(io.outputs[0].name, "y");  // alphabetical, not the return order
  EXPECT_EQ(io.output_bytes, 4 * io.padded_seq * 2);
}

// A decode step's KV cache: an input of its own length (LegalizeIoOptions::seq names the
// tokens), never padded, widened in channels to the minimum surface (ANE012), marked fixed; the
// tokens are padded as ever; the real token's results do not change.
TEST(LegalizeIo, AFixedLengthInputKeepsItsLengthAndIsWidenedInChannels) {
  const char* text = R"(graph g {
  %x = input() : f32[1, 4, 1, 1]
  %cache = input() : f32[1, 4, 1, 64]
  %t = reduce_sum(%cache) {axes = [3], keep_dims = true} : f32[1, 4, 1, 1]
  %y = mul(%x, %t) : f32[1, 4, 1, 1]
  return %y
}
)";
  ir::Graph g = testing::parse(text);
  const ir::Graph before = g;
  const KernelIo io = legalize_io(g, {.seq_multiple = 32, .min_surface_bytes = 1024, .seq = 1});
  ASSERT_EQ(io.inputs.size(), 2u);
  const KernelIoTensor& cache = io.inputs[0];  // alphabetical
  EXPECT_EQ(cache.name, "cache");
  EXPECT_TRUE(cache.fixed);
  EXPECT_EQ(cache.padded, (Shape{1, 8, 1, 64}));  // 1024 bytes / (64 * 2) = 8 channels
  EXPECT_FALSE(io.inputs[1].fixed);
  EXPECT_EQ(io.padded_seq, 128);                   // 4 channels * 2 bytes * 128 = 1024
  EXPECT_EQ(io.inputs[1].padded, (Shape{1, 4, 1, 128}));
  EXPECT_EQ(g.node(*g.find("cache")).type.shape, (Shape{1, 8, 1, 64}));
  // The token's result: the first column of the padded graph, the cache's real channels.
  TensorMap b = testing::random_bindings(before, 3);
  const std::vector<Tensor> want = testing::run(before, b);
  std::vector<float> x(4 * 128, 0.0f), c(8 * 64, 0.0f);
  const std::vector<float> x0 = b["x"].to_floats(), c0 = b["cache"].to_floats();
  for (int i = 0; i < 4; ++i) x[static_cast<std::size_t>(i * 128)] = x0[static_cast<std::size_t>(i)];
  std::copy(c0.begin(), c0.end(), c.begin());
  const std::vector<Tensor> got = testing::run(
      g, {{"x", Tensor::from_floats({1, 4, 1, 128}, x)}, {"cache", Tensor::from_floats({1, 8, 1, 64}, c)}});
  const Tensor first = got[0].slice(3, 0, 1).contiguous();
  EXPECT_LT(max_rel_error(want, {first}, 1e-3), 1e-5);
  // Its length is not padded: one that is not a multiple of the bucket is refused.
  ir::Graph odd = testing::parse(std::string(text).replace(std::string(text).find("f32[1, 4, 1, 64]"), 16, "f32[1, 4, 1, 60]"));
  EXPECT_THROW(legalize_io(odd, {.seq = 1}), Error);
}

}  // namespace
}  // namespace orion::compile
