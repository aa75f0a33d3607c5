#include "model/fast_attention.h"

#include <algorithm>
#include <cstring>

#include "exec/cpu/vector_math.h"

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define ORION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ORION_CLONES
#endif

namespace orion::model {

namespace {

// Scores of four keys at a time, sixteen partial sums each (one register of them), so that the
// loads of q serve four keys and the horizontal sums are amortised.
ORION_CLONES void scores(const float* q, const float* K, std::int64_t n, std::int64_t D, float scale, float* s) {
  constexpr int kLanes = 16;
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float acc[4][kLanes] = {};
    std::int64_t d = 0;
    for (; d + kLanes <= D; d += kLanes)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < kLanes; ++l) acc[k][l] += q[d + l] * K[(j + k) * D + d + l];
    for (int k = 0; k < 4; ++k) {
      float sum = 0;
      for (std::int64_t e = d; e < D; ++e) sum += q[e] * K[(j + k) * D + e];
      for (int l = 0; l < kLanes; ++l) sum += acc[k][l];
      s[j + k] = sum * scale;
    }
  }
  for (; j < n; ++j) {
    float sum = 0;
    for (std::int64_t e = 0; e < D; ++e) sum += q[e] * K[j * D + e];
    s[j] = sum * scale;
  }
}

ORION_CLONES void weighted_sum(const float* p, const float* V, std::int64_t n, std::int64_t D, float* out) {
  std::fill(out, out + D, 0.0f);
  for (std::int64_t j = 0; j < n; ++j) {
    const float w = p[j];
    const float* v = V + j * D;
    for (std::int64_t d = 0; d < D; ++d) out[d] += w * v[d];
  }
}

}  // namespace

void attend_one_query(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D,
                      float scale, float* s, float* out) {
  scores(q, K, n, D, scale, s);
  exec::cpu::softmax_row(s, n);
  weighted_sum(s, V, n, D, out);
}

void cache_heads(const float* row, float* cache, std::int64_t kv_heads, std::int64_t positions,
                 std::int64_t head_dim, std::int64_t position) {
  for (std::int64_t h = 0; h < kv_heads; ++h)
    std::memcpy(cache + (h * positions + position) * head_dim, row + h * head_dim,
                static_cast<std::size_t>(head_dim) * sizeof(float));
}

void attend_heads(const float* q, const float* K, const float* V, std::int64_t heads, std::int64_t kv_heads,
                  std::int64_t positions, std::int64_t n, std::int64_t D, float scale, float* scores, float* out,
                  ThreadPool& pool) {
  const std::int64_t group = heads / kv_heads;
  pool.parallel_for(0, heads, 1, [&](std::int64_t h0, std::int64_t h1) {
    for (std::int64_t h = h0; h < h1; ++h) {
      const std::int64_t kv = (h / group) * positions * D;
      attend_one_query(q + h * D, K + kv, V + kv, n, D, scale, scores + h * positions, out + h * D);
    }
  });
}

}  // namespace orion::model
