// The q4 row kernel for arm64 cores with the dot-product instructions (FEAT_DotProd): SDOT sums
// each lane's 4 products of nibbles and digits in one instruction; the high digits' sums, times
// 128, start the low digits'. Chosen only where cpu_features().dotprod says the core has them.
#if defined(__aarch64__)

// As gemv_q8_neon_dotprod.cpp: GCC 12 inlines vdotq_s32 only into "arch=armv8.2-a+dotprod".
#if defined(__clang__)
#define ORION_Q4_TARGET __attribute__((target("dotprod")))
#else
#define ORION_Q4_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

#include <arm_neon.h>

#include "exec/cpu/gemv_q4.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q4_TARGET inline int32x4_t q4_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if !defined(__clang__) || defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, a, b);
#else
  // clang's arm_neon.h declares vdotq_s32 only when the whole build targets dot products
  // (gemv_q8_neon_dotprod.cpp).
  __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
  return acc;
#endif
}

struct LaneDot {
  ORION_Q4_TARGET int32x4_t operator()(int8x16_t lo, int8x16_t hi, const int8x16_t* d) const {
    const int32x4_t high = q4_sdot(q4_sdot(vdupq_n_s32(0), lo, d[0]), hi, d[1]);
    return q4_sdot(q4_sdot(vshlq_n_s32(high, 7), lo, d[2]), hi, d[3]);
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_neon.h"

namespace orion::exec::cpu::detail {

void q4_rows_neon_dotprod(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                          std::int64_t r0, std::int64_t r1) {
  q4_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q4_vectors_neon_dotprod(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias, float* const* y,
                             std::int64_t r0, std::int64_t r1) {
  q4_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
