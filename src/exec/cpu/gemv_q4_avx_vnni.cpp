// The q4 row kernel for AVX-VNNI (VEX-encoded vpdpbusd on 256-bit registers): the weights'
// nibbles as the unsigned bytes, the activation's digits as the signed ones, each lane's 4
// products and their sum in one instruction.
#if defined(__x86_64__)

#define ORION_Q4_TARGET __attribute__((target("avx2,fma,avxvnni")))

#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q4_TARGET __m256i operator()(__m256i lo, __m256i hi, const __m256i* d) const {
    const __m256i high = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), lo, d[0]), hi, d[1]);
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_slli_epi32(high, 7), lo, d[2]), hi, d[3]);
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_avx2.h"

namespace orion::exec::cpu::detail {

void q4_rows_avx_vnni(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                      std::int64_t r1) {
  q4_rows_simd<kAvx2PrefetchBytes>(W, x, bias, y, r0, r1);
}

void q4_vectors_avx_vnni(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                         std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<kAvx2PrefetchBytes>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
