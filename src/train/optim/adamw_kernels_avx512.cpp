// The AdamW loops for AVX-512F (16 floats per register); tails through masked loads and
// stores, so that every element goes through the same instructions and no byte outside the
// arrays is touched. Nothing here runs unless isa_supported(Isa::avx512).
#include "train/optim/adamw_kernels.h"

#if defined(__x86_64__)

#include "exec/cpu/intrinsics.h"

#define ORION_AVX512 __attribute__((target("avx512f,fma")))

namespace orion::train::detail {

namespace {

ORION_AVX512 inline __mmask16 tail_mask(std::int64_t n) {  // n in [1, 16]
  return static_cast<__mmask16>((1u << n) - 1u);
}

ORION_AVX512 inline void add_squares(__m512 x, __m512d& lo, __m512d& hi) {
  const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  const __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  lo = _mm512_fmadd_pd(a, a, lo);
  hi = _mm512_fmadd_pd(b, b, hi);
}

ORION_AVX512 double sum_squares(const float* x, std::int64_t n) {
  __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    add_squares(_mm512_loadu_ps(x + i), acc[0], acc[1]);
    add_squares(_mm512_loadu_ps(x + i + 16), acc[2], acc[3]);
  }
  for (; i < n; i += 16) {
    const std::int64_t left = n - i < 16 ? n - i : 16;
    add_squares(_mm512_maskz_loadu_ps(tail_mask(left), x + i), acc[0], acc[1]);
  }
  const __m512d s = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, s);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

struct Coeffs {
  __m512 grad_mul, beta1, omb1, beta2, omb2, step_size, inv_sqrt_bc2, eps, decay;
};

ORION_AVX512 inline void update16(float* p, const float* g, float* m, float* v, __mmask16 mask, const Coeffs& c) {
  const __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, g), c.grad_mul);
  const __m512 mi = _mm512_add_ps(_mm512_mul_ps(c.beta1, _mm512_maskz_loadu_ps(mask, m)), _mm512_mul_ps(c.omb1, gi));
  const __m512 vi = _mm512_add_ps(_mm512_mul_ps(c.beta2, _mm512_maskz_loadu_ps(mask, v)),
                                  _mm512_mul_ps(c.omb2, _mm512_mul_ps(gi, gi)));
  const __m512 denom = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vi), c.inv_sqrt_bc2), c.eps);
  const __m512 pi = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, p), c.decay),
                                  _mm512_mul_ps(c.step_size, _mm512_div_ps(mi, denom)));
  _mm512_mask_storeu_ps(p, mask, pi);
  _mm512_mask_storeu_ps(m, mask, mi);
  _mm512_mask_storeu_ps(v, mask, vi);
}

ORION_AVX512 void update(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWCoeffs& k) {
  const Coeffs c{_mm512_set1_ps(k.grad_mul),  _mm512_set1_ps(k.beta1),        _mm512_set1_ps(k.one_minus_beta1),
                 _mm512_set1_ps(k.beta2),     _mm512_set1_ps(k.one_minus_beta2), _mm512_set1_ps(k.step_size),
                 _mm512_set1_ps(k.inv_sqrt_bc2), _mm512_set1_ps(k.eps),       _mm512_set1_ps(k.decay)};
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) update16(p + i, g + i, m + i, v + i, 0xffff, c);
  if (i < n) update16(p + i, g + i, m + i, v + i, tail_mask(n - i), c);
}

ORION_AVX512 bool all_finite(const float* x, std::int64_t n) {
  const __m512i exp_bits = _mm512_set1_epi32(0x7f800000);
  __mmask16 bad = 0;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(x + i);
    bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, exp_bits), exp_bits);
  }
  if (i < n) {
    const __mmask16 mask = tail_mask(n - i);
    const __m512i bits = _mm512_maskz_loadu_epi32(mask, x + i);
    bad |= _mm512_mask_cmpeq_epi32_mask(mask, _mm512_and_si512(bits, exp_bits), exp_bits);
  }
  return bad == 0;
}

}  // namespace

const AdamWKernels kAvx512AdamWKernels = {sum_squares, update, all_finite};

}  // namespace orion::train::detail

#endif
