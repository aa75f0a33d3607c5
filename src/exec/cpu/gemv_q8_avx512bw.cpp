// The q8 row kernel for AVX-512 without VNNI (AVX-512BW): |xq| times q with xq's sign in
// vpmaddubsw (pairs, exact in int16), then vpmaddwd by ones (lanes of 4, int32).
#if defined(__x86_64__)

#define ORION_Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  struct X {
    __m512i abs;
    __mmask64 negative;
  };
  ORION_Q8_TARGET X load(const QuantizedActivation& x, std::int64_t j) const {
    const __m512i q = _mm512_loadu_si512(x.q.data() + kQ8Chunk * j);
    return {_mm512_abs_epi8(q), _mm512_movepi8_mask(q)};
  }
  ORION_Q8_TARGET __m512i weights(__m512i w) const { return w; }
  ORION_Q8_TARGET __m512i operator()(const X& x, __m512i w) const {
    const __m512i signed_w = _mm512_mask_sub_epi8(w, x.negative, _mm512_setzero_si512(), w);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(x.abs, signed_w), _mm512_set1_epi16(1));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_avx512.h"

namespace orion::exec::cpu::detail {

void q8_rows_avx512bw(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                      float* y, std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_avx512bw(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                         std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
