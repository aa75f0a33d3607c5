// chunk_matmuls: matmuls on weights beyond the budget split along the output axis, joined by
// a concat; the rewrite checked by its text and numerically.
#include <gtest/gtest.h>

#include "compile/passes/chunk_matmuls.h"
#include "core/error.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using testing::expect_text;
using testing::run_pass;

// w is [10, 4]: 80 bytes in fp16. v [4, 3] (24 bytes) fits any budget used here.
constexpr std::string_view kChunkBefore = R"(graph g {
  %x = input() : f32[2, 4]
  %w = param() : f32[10, 4]
  %v = param() : f32[4, 3]
  %y = matmul(%x, %w) {transpose_x = false, transpose_y = true} : f32[2, 10]
  %z = matmul(%x, %v) {transpose_x = false, transpose_y = false} : f32[2, 3]
  return %y, %z
}
)";

TEST(ChunkMatmuls, SplitsAWeightBeyondTheBudgetIntoEqualPieces) {
  bool changed = false;
  // 30 bytes: ceil(80 / 30) = 3 pieces of ceil(10 / 3) = 4 rows, the last one 2.
  const std::string got = run_pass(kChunkBefore, [](ir::Graph& g) { return chunk_matmuls(g, 30) > 0; }, &changed);
  EXPECT_TRUE(changed);
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 4]
  %w = param() : f32[10, 4]
  %v = param() : f32[4, 3]
  %y.chunk0.weight = slice(%w) {begin = [0, 0], end = [4, 4]} : f32[4, 4]
  %y.chunk0 = matmul(%x, %y.chunk0.weight) {transpose_x = false, transpose_y = true} : f32[2, 4]
  %y.chunk1.weight = slice(%w) {begin = [4, 0], end = [8, 4]} : f32[4, 4]
  %y.chunk1 = matmul(%x, %y.chunk1.weight) {transpose_x = false, transpose_y = true} : f32[2, 4]
  %y.chunk2.weight = slice(%w) {begin = [8, 0], end = [10, 4]} : f32[2, 4]
  %y.chunk2 = matmul(%x, %y.chunk2.weight) {transpose_x = false, transpose_y = true} : f32[2, 2]
  %y = concat(%y.chunk0, %y.chunk1, %y.chunk2) {axis = 1} : f32[2, 10]
  %z = matmul(%x, %v) {transpose_x = false, transpose_y = false} : f32[2, 3]
  return %y, %z
}
)");
}

TEST(ChunkMatmuls, WeightsWithinTheBudgetAreLeftAlone) {
  bool changed = true;
  const std::string got = run_pass(kChunkBefore, [](ir::Graph& g) { return chunk_matmuls(g, 80) > 0; }, &changed);
  EXPECT_FALSE(changed);
  expect_text(got, kChunkBefore);
}

TEST(ChunkMatmuls, SameResultsAndColumnsOfAnUntransposedWeight) {
  const ir::Graph before = testing::parse(R"(graph g {
  %x = input() : f32[3, 8]
  %w = param() : f32[8, 40]
  %y = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[3, 40]
  return %y
}
)");
  ir::Graph after = before;
  EXPECT_EQ(chunk_matmuls(after, 200), 1);  // 640 bytes: 4 pieces of 10 columns
  int slices = 0;
  for (const ir::Node& n : after.nodes())
    if (n.op == ir::Op::slice) {
      ++slices;
      EXPECT_EQ(n.type.shape, (Shape{8, 10}));
    }
  EXPECT_EQ(slices, 4);
  const TensorMap b = testing::random_bindings(before, 3);
  const auto want = testing::run(before, b)[0].to_floats(), got = testing::run(after, b)[0].to_floats();
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i], got[i]) << i;  // same sums, same order
}

TEST(ChunkMatmuls, ActivationsAreNotWeights) {
  // Both operands at run time: nothing to bake, nothing to split.
  ir::Graph g = testing::parse(R"(graph g {
  %x = input() : f32[2, 64]
  %w = input() : f32[64, 64]
  %y = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[2, 64]
  return %y
}
)");
  EXPECT_EQ(chunk_matmuls(g, 16), 0);
  EXPECT_THROW(chunk_matmuls(g, 0), Error);
}

}  // namespace
}  // namespace orion::compile
