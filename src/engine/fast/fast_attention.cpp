#include "engine/fast/fast_attention.h"

#include <algorithm>
#include <cstring>

#include "exec/cpu/gemv.h"
#include "exec/cpu/vector_math.h"

#if defined(__x86_64__)
#include "exec/cpu/intrinsics.h"
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define ORION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ORION_CLONES
#endif

namespace orion::engine {

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

#if defined(__x86_64__)
#define ORION_AVX2 __attribute__((target("avx2,fma")))

// The AVX2 clones of the loops above ran well below the memory's pace on an AVX2-only CPU
// (docs/PERFORMANCE.md, "Smaller measurements behind the code"): target_clones' "avx2" has no
// FMA, and GCC kept the sixteen-lane sums in memory. These are written out instead, for
// head sizes that are a multiple of 8 (GPT-2's and Llama's 64).

// Four keys at a time, two accumulators each (eight FMA chains); while K streams in, the
// values of the same positions are asked for, so that weighted_sum finds them on the way.
ORION_AVX2 void scores_avx2(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D, float scale,
                            float* s) {
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* k = K + j * D;
    for (std::int64_t i = 0; i < 4 * D; i += 16) _mm_prefetch(reinterpret_cast<const char*>(V + j * D + i), _MM_HINT_T0);
    __m256 a[4][2];
    for (auto& r : a) r[0] = r[1] = _mm256_setzero_ps();
    std::int64_t d = 0;
    for (; d + 16 <= D; d += 16) {
      const __m256 x0 = _mm256_loadu_ps(q + d), x1 = _mm256_loadu_ps(q + d + 8);
      for (int r = 0; r < 4; ++r) {
        a[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(k + r * D + d), x0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(k + r * D + d + 8), x1, a[r][1]);
      }
    }
    if (d < D) {  // D % 16 == 8
      const __m256 x0 = _mm256_loadu_ps(q + d);
      for (int r = 0; r < 4; ++r) a[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(k + r * D + d), x0, a[r][0]);
    }
    // The four sums at once: hadd pairs lanes within 128-bit halves, then the halves are added.
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(_mm256_add_ps(a[0][0], a[0][1]), _mm256_add_ps(a[1][0], a[1][1])),
                                    _mm256_hadd_ps(_mm256_add_ps(a[2][0], a[2][1]), _mm256_add_ps(a[3][0], a[3][1])));
    const __m128 sum = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    _mm_storeu_ps(s + j, _mm_mul_ps(sum, _mm_set1_ps(scale)));
  }
  for (; j < n; ++j) {
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t d = 0; d < D; d += 8)
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(K + j * D + d), _mm256_loadu_ps(q + d), acc);
    s[j] = exec::cpu::hsum8(acc) * scale;
  }
}

// out in registers, 64 columns (eight registers) at a time over all keys.
ORION_AVX2 void weighted_sum_avx2(const float* p, const float* V, std::int64_t n, std::int64_t D, float* out) {
  for (std::int64_t d0 = 0; d0 < D; d0 += 64) {
    const int regs = static_cast<int>(std::min<std::int64_t>(64, D - d0) / 8);
    __m256 acc[8];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (std::int64_t j = 0; j < n; ++j) {
      const __m256 w = _mm256_broadcast_ss(p + j);
      const float* v = V + j * D + d0;
      for (int r = 0; r < regs; ++r) acc[r] = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 8 * r), acc[r]);
    }
    for (int r = 0; r < regs; ++r) _mm256_storeu_ps(out + d0 + 8 * r, acc[r]);
  }
}

bool use_avx2(std::int64_t D) {
  // Where AVX-512 runs, its clones above are kept: they are what was measured there
  // (docs/log/performance-decode.md, Zen 5), and their AVX-512 build has FMA.
  static const bool avx2_only = exec::cpu::best_isa() == exec::cpu::Isa::avx2;
  return avx2_only && D % 8 == 0;
}

#elif defined(__aarch64__)

// The AVX2 loops' structure with NEON's four lanes, for head sizes that are a multiple of 4:
// GCC vectorises the portable loops above for NEON too, but keeps their sixteen-lane sums in
// memory, as it did for the AVX2 clones. FMA is in every arm64 core's baseline.

// Four keys at a time, two accumulators each (eight FMA chains), with the values of the same
// positions asked for while K streams in, as scores_avx2 does.
void scores_neon(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D, float scale,
                 float* s) {
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* k = K + j * D;
    for (std::int64_t i = 0; i < 4 * D; i += 16) __builtin_prefetch(V + j * D + i);
    float32x4_t a[4][2];
    for (auto& r : a) r[0] = r[1] = vdupq_n_f32(0.0f);
    std::int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
      const float32x4_t x0 = vld1q_f32(q + d), x1 = vld1q_f32(q + d + 4);
      for (int r = 0; r < 4; ++r) {
        a[r][0] = vfmaq_f32(a[r][0], vld1q_f32(k + r * D + d), x0);
        a[r][1] = vfmaq_f32(a[r][1], vld1q_f32(k + r * D + d + 4), x1);
      }
    }
    if (d < D) {  // D % 8 == 4
      const float32x4_t x0 = vld1q_f32(q + d);
      for (int r = 0; r < 4; ++r) a[r][0] = vfmaq_f32(a[r][0], vld1q_f32(k + r * D + d), x0);
    }
    // The four sums at once: each pairwise add halves the lanes of two registers.
    const float32x4_t sum = vpaddq_f32(vpaddq_f32(vaddq_f32(a[0][0], a[0][1]), vaddq_f32(a[1][0], a[1][1])),
                                       vpaddq_f32(vaddq_f32(a[2][0], a[2][1]), vaddq_f32(a[3][0], a[3][1])));
    vst1q_f32(s + j, vmulq_n_f32(sum, scale));
  }
  for (; j < n; ++j) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (std::int64_t d = 0; d < D; d += 4) acc = vfmaq_f32(acc, vld1q_f32(K + j * D + d), vld1q_f32(q + d));
    s[j] = vaddvq_f32(acc) * scale;
  }
}

// out in registers, 64 columns (sixteen of the 32 registers) at a time over all keys.
void weighted_sum_neon(const float* p, const float* V, std::int64_t n, std::int64_t D, float* out) {
  for (std::int64_t d0 = 0; d0 < D; d0 += 64) {
    const int regs = static_cast<int>(std::min<std::int64_t>(64, D - d0) / 4);
    float32x4_t acc[16];
    for (auto& a : acc) a = vdupq_n_f32(0.0f);
    for (std::int64_t j = 0; j < n; ++j) {
      const float32x4_t w = vld1q_dup_f32(p + j);
      const float* v = V + j * D + d0;
      for (int r = 0; r < regs; ++r) acc[r] = vfmaq_f32(acc[r], w, vld1q_f32(v + 4 * r));
    }
    for (int r = 0; r < regs; ++r) vst1q_f32(out + d0 + 4 * r, acc[r]);
  }
}

bool use_neon(std::int64_t D) {
  static const bool neon = exec::cpu::best_isa() == exec::cpu::Isa::neon;
  return neon && D % 4 == 0;
}
#endif

}  // namespace

void attend_one_query(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D,
                      float scale, float* s, float* out) {
#if defined(__x86_64__)
  if (use_avx2(D)) {
    scores_avx2(q, K, V, n, D, scale, s);
    exec::cpu::softmax_row(s, n);
    weighted_sum_avx2(s, V, n, D, out);
    return;
  }
#elif defined(__aarch64__)
  if (use_neon(D)) {
    scores_neon(q, K, V, n, D, scale, s);
    exec::cpu::softmax_row(s, n);
    weighted_sum_neon(s, V, n, D, out);
    return;
  }
#endif
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
  const AttentionRow row{q, K, V, n, out};
  attend_rows({&row, 1}, heads, kv_heads, positions, D, scale, scores, pool);
}

void attend_rows(std::span<const AttentionRow> rows, std::int64_t heads, std::int64_t kv_heads, std::int64_t positions,
                 std::int64_t D, float scale, float* scores, ThreadPool& pool) {
  const std::int64_t group = heads / kv_heads;
  const auto tasks = static_cast<std::int64_t>(rows.size()) * heads;
  pool.parallel_for(0, tasks, 1, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const AttentionRow& r = rows[static_cast<std::size_t>(t / heads)];
      const std::int64_t h = t % heads, kv = (h / group) * positions * D;
      attend_one_query(r.q + h * D, r.K + kv, r.V + kv, r.n, D, scale, scores + t * positions, r.out + h * D);
    }
  });
}

}  // namespace orion::engine
