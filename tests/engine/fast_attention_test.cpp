// The fast decoders' attention for one query (attend_one_query) and over a layer's heads
// (attend_heads) against attention evaluated in fp64, on key counts that leave every tail of the
// four-key loop and head sizes that take each path: multiples of 16 and of 8 (the AVX2 loops
// where that is the best ISA), of 4 (NEON's, on arm64; 20 leaves the half step of its eight
// columns at a time) and others (the loops compiled per ISA).
#include "engine/fast/fast_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/random.h"

namespace orion::engine {
namespace {

std::vector<double> attention_fp64(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D,
                                   double scale) {
  std::vector<double> s(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(D), 0.0);
  double mx = -1e300, z = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double dot = 0;
    for (std::int64_t d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * K[j * D + d];
    s[static_cast<std::size_t>(j)] = dot * scale;
    mx = std::max(mx, dot * scale);
  }
  for (double& v : s) z += (v = std::exp(v - mx));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t d = 0; d < D; ++d) out[static_cast<std::size_t>(d)] += s[static_cast<std::size_t>(j)] / z * V[j * D + d];
  return out;
}

std::vector<float> normals(Rng& rng, std::int64_t count) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = rng.normal();
  return v;
}

TEST(FastAttention, OneQueryMatchesFp64OnEveryTail) {
  Rng rng(11);
  for (std::int64_t D : {64, 72, 24, 8, 20, 3}) {
    for (std::int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 33, 130}) {
      const std::vector<float> q = normals(rng, D), K = normals(rng, n * D), V = normals(rng, n * D);
      const double scale = 1.0 / std::sqrt(static_cast<double>(D));
      std::vector<float> scores(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(D), -1.0f);
      attend_one_query(q.data(), K.data(), V.data(), n, D, static_cast<float>(scale), scores.data(), out.data());
      const std::vector<double> want = attention_fp64(q.data(), K.data(), V.data(), n, D, scale);
      for (std::int64_t d = 0; d < D; ++d) {
        const double w = want[static_cast<std::size_t>(d)];
        ASSERT_NEAR(out[static_cast<std::size_t>(d)], w, 2e-5 * (1 + std::fabs(w))) << "D " << D << " n " << n << " d " << d;
      }
    }
  }
}

TEST(FastAttention, HeadsOverTheCacheLayoutMatchOneQueryEach) {
  // Grouped: 6 query heads over 2 key/value heads, 40 slots per head, 37 of them filled.
  const std::int64_t heads = 6, kv_heads = 2, positions = 40, n = 37, D = 64;
  Rng rng(12);
  const std::vector<float> q = normals(rng, heads * D), K = normals(rng, kv_heads * positions * D),
                           V = normals(rng, kv_heads * positions * D);
  std::vector<float> scores(static_cast<std::size_t>(heads * positions)), out(static_cast<std::size_t>(heads * D));
  ThreadPool pool(2);
  attend_heads(q.data(), K.data(), V.data(), heads, kv_heads, positions, n, D, 0.125f, scores.data(), out.data(), pool);
  for (std::int64_t h = 0; h < heads; ++h) {
    const std::int64_t kv = (h / (heads / kv_heads)) * positions * D;
    const std::vector<double> want = attention_fp64(q.data() + h * D, K.data() + kv, V.data() + kv, n, D, 0.125);
    for (std::int64_t d = 0; d < D; ++d) {
      const double w = want[static_cast<std::size_t>(d)];
      ASSERT_NEAR(out[static_cast<std::size_t>(h * D + d)], w, 2e-5 * (1 + std::fabs(w))) << "head " << h << " d " << d;
    }
  }
}

}  // namespace
}  // namespace orion::engine
