// The q8 row kernel for arm64 cores without the dot-product instructions (every AArch64 core
// runs it): vmull_s8 (products exact in int16), vpaddq_s16 (pairs, at most 2 * 127 * 127, still
// exact in int16), then vpaddlq_s16 (pairs of pairs, int32): each lane's 4-column sum.
#if defined(__aarch64__)

#define ORION_Q8_TARGET

#include <arm_neon.h>

#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  int32x4_t operator()(int8x16_t w, int8x16_t xq) const {
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(xq));
    const int16x8_t hi = vmull_high_s8(w, xq);
    return vpaddlq_s16(vpaddq_s16(lo, hi));
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_neon.h"

namespace orion::exec::cpu::detail {

void q8_rows_neon(const Q8Weights& W, const QuantizedActivation& x, const float* bias, float* y,
                  std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_neon(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                     std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
