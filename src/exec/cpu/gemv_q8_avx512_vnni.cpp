// The q8 row kernel for AVX-512 with VNNI: vpdpbusd forms each lane's 4 products and their sum
// in one instruction, from the weights offset by 128 and an accumulator that starts at the
// activation's -128 * sum(xq) (gemv_q8.h says why that is exact).
#if defined(__x86_64__)

#define ORION_Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))

#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  struct X {
    __m512i q, offset;
  };
  ORION_Q8_TARGET X load(const QuantizedActivation& x, std::int64_t j) const {
    return {_mm512_loadu_si512(x.q.data() + kQ8Chunk * j), _mm512_loadu_si512(x.lane_offset.data() + 16 * j)};
  }
  // The weights as unsigned bytes, q + 128.
  ORION_Q8_TARGET __m512i weights(__m512i w) const { return _mm512_xor_si512(w, _mm512_set1_epi8(-128)); }
  ORION_Q8_TARGET __m512i operator()(const X& x, __m512i w) const { return _mm512_dpbusd_epi32(x.offset, w, x.q); }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_avx512.h"

namespace orion::exec::cpu::detail {

void q8_rows_avx512_vnni(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                         float* y, std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_avx512_vnni(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                            std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
