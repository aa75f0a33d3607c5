// The q4 row kernel for AVX-512 without VNNI (AVX-512BW): vpmaddubsw multiplies the weights'
// nibbles (unsigned) by the activation's digits (signed) and adds pairs, exact in int16 (the
// low and high nibbles' pairs together at most 4 * 15 * 127 < 32768); vpmaddwd then sums pairs
// of those into the int32 lanes, the high digits' weighted by 128.
#if defined(__x86_64__)

#define ORION_Q4_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q4_TARGET __m512i operator()(__m512i lo, __m512i hi, const __m512i* d) const {
    const __m512i high = _mm512_add_epi16(_mm512_maddubs_epi16(lo, d[0]), _mm512_maddubs_epi16(hi, d[1]));
    const __m512i low = _mm512_add_epi16(_mm512_maddubs_epi16(lo, d[2]), _mm512_maddubs_epi16(hi, d[3]));
    return _mm512_add_epi32(_mm512_madd_epi16(high, _mm512_set1_epi16(128)), _mm512_madd_epi16(low, _mm512_set1_epi16(1)));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_avx512.h"

namespace orion::exec::cpu::detail {

void q4_rows_avx512bw(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                      std::int64_t r1) {
  q4_rows_simd<kQ4Avx512PrefetchBytes>(W, x, bias, y, r0, r1);
}

void q4_vectors_avx512bw(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                         std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<kQ4Avx512PrefetchBytes>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
