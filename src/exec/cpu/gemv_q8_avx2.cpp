// The q8 row kernel for AVX2 without VNNI: vpmaddubsw (pairs of |xq| times signed q, exact in
// int16), then vpmaddwd by ones (lanes of 4, int32).
#if defined(__x86_64__)

#define ORION_Q8_TARGET __attribute__((target("avx2,fma")))

#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q8_TARGET __m256i operator()(__m256i abs_x, __m256i w_signed) const {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_x, w_signed), _mm256_set1_epi16(1));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_avx2.h"

namespace orion::exec::cpu::detail {

void q8_rows_avx2(const Q8Weights& W, const QuantizedActivation& x, const float* bias, float* y,
                  std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<kAvx2PrefetchBytes>(W, x, bias, y, r0, r1);
}

void q8_rows_avx2_no_prefetch(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                              float* y, std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_avx2(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                     std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<kAvx2PrefetchBytes>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
