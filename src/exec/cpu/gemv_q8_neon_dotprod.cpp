// The q8 row kernel for arm64 cores with the dot-product instructions (FEAT_DotProd: Apple's
// cores, Neoverse, Cortex-A55/A76 and later): SDOT sums each lane's 4 signed products in one
// instruction. Chosen only where cpu_features().dotprod says the core has them.
#if defined(__aarch64__)

// GCC 12's arm_neon.h declares vdotq_s32 for "arch=armv8.2-a+dotprod" and will not inline it
// into a function targeting "+dotprod" alone; every core with FEAT_DotProd is at least
// Armv8.2-A. clang names the feature alone.
#if defined(__clang__)
#define ORION_Q8_TARGET __attribute__((target("dotprod")))
#else
#define ORION_Q8_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

#include <arm_neon.h>

#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu::detail {
namespace {

struct LaneDot {
  ORION_Q8_TARGET int32x4_t operator()(int8x16_t w, int8x16_t xq) const {
#if !defined(__clang__) || defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, xq);
#else
    // clang's arm_neon.h (14 at least) declares vdotq_s32 only when the whole build targets
    // dot products (macOS's default arm64 target does), whatever the function's attribute.
    int32x4_t sum = vdupq_n_s32(0);
    __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(sum) : "w"(w), "w"(xq));
    return sum;
#endif
  }
};

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_neon.h"

namespace orion::exec::cpu::detail {

void q8_rows_neon_dotprod(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                          float* y, std::int64_t r0, std::int64_t r1) {
  q8_rows_simd<0>(W, x, bias, y, r0, r1);
}

void q8_vectors_neon_dotprod(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias, float* const* y,
                             std::int64_t r0, std::int64_t r1) {
  q8_vectors_simd<0>(W, x, n, bias, y, r0, r1);
}

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
