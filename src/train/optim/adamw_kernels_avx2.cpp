// The AdamW loops for AVX2 (8 floats per register); tails through masked loads and stores, so
// that every element goes through the same instructions and no byte outside the arrays is
// touched. Nothing here runs unless isa_supported(Isa::avx2).
#include "train/optim/adamw_kernels.h"

#if defined(__x86_64__)

#include "exec/cpu/intrinsics.h"

#define ORION_AVX2 __attribute__((target("avx2,fma")))

namespace orion::train::detail {

namespace {

// The first n (0..8) lanes set.
ORION_AVX2 inline __m256i tail_mask(std::int64_t n) {
  static const std::int32_t kBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kBits + 8 - n));
}

ORION_AVX2 inline void add_squares(__m256 x, __m256d& lo, __m256d& hi) {
  const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
  const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  lo = _mm256_fmadd_pd(a, a, lo);
  hi = _mm256_fmadd_pd(b, b, hi);
}

ORION_AVX2 double sum_squares(const float* x, std::int64_t n) {
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    add_squares(_mm256_loadu_ps(x + i), acc[0], acc[1]);
    add_squares(_mm256_loadu_ps(x + i + 8), acc[2], acc[3]);
  }
  for (; i < n; i += 8) {
    const std::int64_t left = n - i < 8 ? n - i : 8;
    add_squares(_mm256_maskload_ps(x + i, tail_mask(left)), acc[0], acc[1]);
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

struct Coeffs {
  __m256 grad_mul, beta1, omb1, beta2, omb2, step_size, inv_sqrt_bc2, eps, decay;
};

ORION_AVX2 inline void update8(float* p, const float* g, float* m, float* v, __m256i mask, const Coeffs& c) {
  const __m256 gi = _mm256_mul_ps(_mm256_maskload_ps(g, mask), c.grad_mul);
  const __m256 mi = _mm256_add_ps(_mm256_mul_ps(c.beta1, _mm256_maskload_ps(m, mask)), _mm256_mul_ps(c.omb1, gi));
  const __m256 vi = _mm256_add_ps(_mm256_mul_ps(c.beta2, _mm256_maskload_ps(v, mask)),
                                  _mm256_mul_ps(c.omb2, _mm256_mul_ps(gi, gi)));
  const __m256 denom = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), c.inv_sqrt_bc2), c.eps);
  const __m256 pi = _mm256_sub_ps(_mm256_mul_ps(_mm256_maskload_ps(p, mask), c.decay),
                                  _mm256_mul_ps(c.step_size, _mm256_div_ps(mi, denom)));
  _mm256_maskstore_ps(p, mask, pi);
  _mm256_maskstore_ps(m, mask, mi);
  _mm256_maskstore_ps(v, mask, vi);
}

ORION_AVX2 void update(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWCoeffs& k) {
  const Coeffs c{_mm256_set1_ps(k.grad_mul),  _mm256_set1_ps(k.beta1),        _mm256_set1_ps(k.one_minus_beta1),
                 _mm256_set1_ps(k.beta2),     _mm256_set1_ps(k.one_minus_beta2), _mm256_set1_ps(k.step_size),
                 _mm256_set1_ps(k.inv_sqrt_bc2), _mm256_set1_ps(k.eps),       _mm256_set1_ps(k.decay)};
  const __m256i all = _mm256_set1_epi32(-1);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) update8(p + i, g + i, m + i, v + i, all, c);
  if (i < n) update8(p + i, g + i, m + i, v + i, tail_mask(n - i), c);
}

ORION_AVX2 bool all_finite(const float* x, std::int64_t n) {
  const __m256i exp_bits = _mm256_set1_epi32(0x7f800000);
  __m256i bad = _mm256_setzero_si256();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(bits, exp_bits), exp_bits));
  }
  if (i < n) {
    // Masked-off lanes load as 0, which is finite.
    const __m256i bits = _mm256_castps_si256(_mm256_maskload_ps(x + i, tail_mask(n - i)));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(bits, exp_bits), exp_bits));
  }
  return _mm256_testz_si256(bad, bad) != 0;
}

}  // namespace

const AdamWKernels kAvx2AdamWKernels = {sum_squares, update, all_finite};

}  // namespace orion::train::detail

#endif
