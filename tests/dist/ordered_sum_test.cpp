// The fixed-order sum's pieces and order, and the one-process collective. The MPI transport runs
// in tests/cli/data_parallel_cli_test.cpp, under mpirun.
#include <gtest/gtest.h>

#include <vector>

#include "dist/collective.h"
#include "dist/ordered_sum.h"

namespace orion::dist {
namespace {

TEST(OrderedSum, PiecesCoverTheVectorInOrderAndDifferByOneAtMost) {
  for (int ranks : {1, 2, 3, 7})
    for (std::int64_t n : {0, 1, 5, 6, 100, 1001}) {
      std::int64_t at = 0, least = n, most = 0;
      for (int k = 0; k < ranks; ++k) {
        const Piece p = piece_of(n, ranks, k);
        EXPECT_EQ(p.begin, at);
        at = p.end;
        least = std::min(least, p.end - p.begin);
        most = std::max(most, p.end - p.begin);
      }
      EXPECT_EQ(at, n);
      EXPECT_LE(most - least, 1);
    }
}

// Rank 0's part, then rank 1's, then rank 2's: ((a + b) + c), which differs from a + (b + c)
// for these values in f32.
TEST(OrderedSum, AddsInRankOrder) {
  const float a = 1.0f, b = -1.0f, c = 1e-8f;
  const std::vector<float> parts{a, 2, b, 3, c, 4};  // three ranks, pieces of two values
  std::vector<float> out(2);
  add_in_rank_order<float>(parts, 3, out);
  EXPECT_EQ(out[0], (a + b) + c);
  EXPECT_NE(out[0], a + (b + c));
  EXPECT_EQ(out[1], 9.0f);
}

TEST(LocalCollective, IsOneRankWhoseSumsAreItsValues) {
  const auto c = local_collective();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  std::vector<float> v{1.5f, -2};
  c->sum(std::span<float>(v));
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2}));
}

}  // namespace
}  // namespace orion::dist
