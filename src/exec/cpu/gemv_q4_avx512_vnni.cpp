// The q4 row kernel for AVX-512 with VNNI: vpdpbusd takes the weights' nibbles as its unsigned
// bytes and the activation's digits as its signed ones, each lane's 4 products and their sum in
// one instruction; the high digits' sums, times 128, start the low digits' (gemv_q4.h).
#if defined(__x86_64__)

#define ORION_Q4_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))

#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q4_TARGET __m512i operator()(__m512i lo, __m512i hi, const __m512i* d) const {
    const __m512i high = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, d[0]), hi, d[1]);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(high, 7), lo, d[2]), hi, d[3]);
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_avx512.h"

namespace orion::exec::cpu::detail {

void q4_rows_avx512_vnni(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                         std::int64_t r1) {
  q4_rows_simd<kQ4Avx512PrefetchBytes>(W, x, bias, y, r0, r1);
}

void q4_rows_avx512_vnni_no_prefetch(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                                     std::int64_t r0, std::int64_t r1) {
  q4_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q4_vectors_avx512_vnni(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                            std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<kQ4Avx512PrefetchBytes>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
