// The q4 row kernel for arm64 cores without the dot-product instructions (every AArch64 core
// runs it): vmull_s8 / vmlal_s8 multiply the nibbles by the digits and add the low and high
// nibbles' products (at most 2 * 15 * 127, exact in int16), vpaddq_s16 adds pairs (still exact
// in int16), vpaddlq_s16 pairs of pairs into the int32 lanes; the high digits' lanes times 128
// plus the low digits'.
#if defined(__aarch64__)

#define ORION_Q4_TARGET

#include <arm_neon.h>

#include "exec/cpu/gemv_q4.h"

namespace orion::exec::cpu::detail {
namespace {

inline int32x4_t q4_lanes(int8x16_t lo, int8x16_t hi, int8x16_t even, int8x16_t odd) {
  const int16x8_t a = vmlal_s8(vmull_s8(vget_low_s8(lo), vget_low_s8(even)), vget_low_s8(hi), vget_low_s8(odd));
  const int16x8_t b = vmlal_high_s8(vmull_high_s8(lo, even), hi, odd);
  return vpaddlq_s16(vpaddq_s16(a, b));
}

struct LaneDot {
  int32x4_t operator()(int8x16_t lo, int8x16_t hi, const int8x16_t* d) const {
    return vaddq_s32(vshlq_n_s32(q4_lanes(lo, hi, d[0], d[1]), 7), q4_lanes(lo, hi, d[2], d[3]));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_neon.h"

namespace orion::exec::cpu::detail {

void q4_rows_neon(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                  std::int64_t r1) {
  q4_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q4_vectors_neon(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                     std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
