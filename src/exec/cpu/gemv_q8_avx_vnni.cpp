// The q8 row kernel for AVX-VNNI (VEX-encoded vpdpbusd on 256-bit registers): each lane's 4
// products of |xq| and signed q and their sum in one instruction.
#if defined(__x86_64__)

#define ORION_Q8_TARGET __attribute__((target("avx2,fma,avxvnni")))

#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q8_TARGET __m256i operator()(__m256i abs_x, __m256i w_signed) const {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), abs_x, w_signed);
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_avx2.h"

namespace orion::exec::cpu::detail {

void q8_rows_avx_vnni(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                      float* y, std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_avx_vnni(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                         std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
