// sgemm (the BLAS wrapper) against a naive fp64 product written here: odd sizes that reach
// every tail of the library's blocking, both transposes of each operand, padded leading
// dimensions, alpha and beta, on 1 and 2 threads.
#include "exec/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace orion::exec::cpu {
namespace {

struct Mat {
  std::int64_t rows, cols, ld;
  std::vector<float> v;
  float at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * ld + c)]; }
};

// A stored [rows, cols] matrix with `pad` unused floats at the end of each row (filled with
// NaN, so that a read past a row shows in the result).
Mat random_mat(Rng& rng, std::int64_t rows, std::int64_t cols, std::int64_t pad) {
  Mat m{rows, cols, cols + pad, std::vector<float>(static_cast<std::size_t>(std::max<std::int64_t>(rows * (cols + pad), 1)))};
  rng.fill_normal(m.v, 0.0f, 1.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = cols; c < cols + pad; ++c) m.v[static_cast<std::size_t>(r * m.ld + c)] = std::numeric_limits<float>::quiet_NaN();
  return m;
}

TEST(Sgemm, MatchesAnFp64ProductOnOddSizesAndEveryTranspose) {
  Rng rng(5);
  const std::int64_t sizes[][3] = {{1, 1, 1}, {1, 7, 33}, {7, 1, 5}, {7, 33, 1}, {33, 7, 100}, {100, 33, 7},
                                   {65, 129, 31}, {128, 100, 257}};
  for (int threads : {1, 2}) {
    set_gemm_threads(threads);
    EXPECT_EQ(gemm_threads(), threads);
    for (const auto& s : sizes) {
      const std::int64_t M = s[0], N = s[1], K = s[2];
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-0.5f, 2.0f}}) {
            const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                                     (ta ? " A^T" : "") + (tb ? " B^T" : "") + " beta " + std::to_string(beta) +
                                     " threads " + std::to_string(threads);
            const Mat A = ta ? random_mat(rng, K, M, 3) : random_mat(rng, M, K, 1);
            const Mat B = tb ? random_mat(rng, N, K, 2) : random_mat(rng, K, N, 0);
            Mat C = random_mat(rng, M, N, 5);
            // beta == 0 must not read C: NaNs there would survive a 0 * NaN.
            if (beta == 0)
              for (std::int64_t r = 0; r < M; ++r)
                for (std::int64_t c = 0; c < N; ++c) C.v[static_cast<std::size_t>(r * C.ld + c)] = std::numeric_limits<float>::quiet_NaN();
            const Mat C0 = C;
            sgemm(ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, M, N, K, alpha, A.v.data(), A.ld,
                  B.v.data(), B.ld, beta, C.v.data(), C.ld);
            double err = 0, scale = 0;
            for (std::int64_t r = 0; r < M; ++r)
              for (std::int64_t c = 0; c < N; ++c) {
                double dot = 0;
                for (std::int64_t k = 0; k < K; ++k)
                  dot += static_cast<double>(ta ? A.at(k, r) : A.at(r, k)) * (tb ? B.at(c, k) : B.at(k, c));
                const double want = alpha * dot + (beta == 0 ? 0.0 : beta * static_cast<double>(C0.at(r, c)));
                err = std::max(err, std::abs(C.at(r, c) - want));
                scale = std::max(scale, std::abs(want));
              }
            // K products of unit normals: the fp32 sums' error grows with about sqrt(K) ulps.
            EXPECT_LT(err / scale, 1e-5) << what;
            for (std::int64_t r = 0; r < M; ++r)  // the padding past each row of C is untouched
              for (std::int64_t c = N; c < C.ld; ++c)
                ASSERT_TRUE(std::isnan(C.at(r, c))) << what;
          }
    }
  }
}

TEST(Sgemm, RefusesShortLeadingDimensionsAndNegativeSizes) {
  std::vector<float> a(64), b(64), c(64);
  EXPECT_THROW(sgemm(Transpose::no, Transpose::no, 2, 3, 4, 1, a.data(), 3, b.data(), 3, 0, c.data(), 3), Error);
  EXPECT_THROW(sgemm(Transpose::no, Transpose::yes, 2, 3, 4, 1, a.data(), 4, b.data(), 3, 0, c.data(), 3), Error);
  EXPECT_THROW(sgemm(Transpose::yes, Transpose::no, 2, 3, 4, 1, a.data(), 1, b.data(), 3, 0, c.data(), 3), Error);
  EXPECT_THROW(sgemm(Transpose::no, Transpose::no, 2, 3, 4, 1, a.data(), 4, b.data(), 3, 0, c.data(), 2), Error);
  EXPECT_THROW(sgemm(Transpose::no, Transpose::no, -1, 3, 4, 1, a.data(), 4, b.data(), 3, 0, c.data(), 3), Error);
  EXPECT_THROW(set_gemm_threads(0), Error);
  EXPECT_NO_THROW(sgemm(Transpose::no, Transpose::no, 2, 3, 4, 1, a.data(), 4, b.data(), 3, 0, c.data(), 3));
}

}  // namespace
}  // namespace orion::exec::cpu
