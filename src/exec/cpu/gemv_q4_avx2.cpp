// The q4 row kernel for AVX2 without VNNI: vpmaddubsw multiplies the weights' nibbles
// (unsigned) by the activation's digits (signed) and adds pairs, exact in int16 (the low and
// high nibbles' pairs together at most 4 * 15 * 127 < 32768); vpmaddwd then sums pairs of those
// into the int32 lanes, the high digits' weighted by 128.
#if defined(__x86_64__)

#define ORION_Q4_TARGET __attribute__((target("avx2,fma")))

#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q4_TARGET __m256i operator()(__m256i lo, __m256i hi, const __m256i* d) const {
    const __m256i high = _mm256_add_epi16(_mm256_maddubs_epi16(lo, d[0]), _mm256_maddubs_epi16(hi, d[1]));
    const __m256i low = _mm256_add_epi16(_mm256_maddubs_epi16(lo, d[2]), _mm256_maddubs_epi16(hi, d[3]));
    return _mm256_add_epi32(_mm256_madd_epi16(high, _mm256_set1_epi16(128)), _mm256_madd_epi16(low, _mm256_set1_epi16(1)));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_avx2.h"

namespace orion::exec::cpu::detail {

void q4_rows_avx2(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                  std::int64_t r1) {
  q4_rows_simd<kAvx2PrefetchBytes>(W, x, bias, y, r0, r1);
}

void q4_rows_avx2_no_prefetch(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                              std::int64_t r0, std::int64_t r1) {
  q4_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q4_vectors_avx2(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                     std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<kAvx2PrefetchBytes>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
