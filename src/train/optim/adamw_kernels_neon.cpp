// The AdamW loops for arm64's Advanced SIMD (4 floats per register, 2 doubles); tails through a
// zero-padded copy, so that every element goes through the same instructions and no byte
// outside the arrays is touched. NEON is in every arm64 core: nothing to check at run time
// beyond isa_supported(Isa::neon), which an arm64 build always gives.
#include "train/optim/adamw_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace orion::train::detail {

namespace {

// A float squared is exact in f64, so a separate multiply and add give what the AVX2 path's
// FMA gives; the file is compiled with -ffp-contract=off like the others.
inline void add_squares(float32x4_t x, float64x2_t& lo, float64x2_t& hi) {
  const float64x2_t a = vcvt_f64_f32(vget_low_f32(x));
  const float64x2_t b = vcvt_high_f64_f32(x);
  lo = vaddq_f64(lo, vmulq_f64(a, a));
  hi = vaddq_f64(hi, vmulq_f64(b, b));
}

double sum_squares(const float* x, std::int64_t n) {
  float64x2_t acc[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    add_squares(vld1q_f32(x + i), acc[0], acc[1]);
    add_squares(vld1q_f32(x + i + 4), acc[2], acc[3]);
  }
  if (i < n) {
    // Zeros square to +0, which leaves a sum of squares unchanged.
    float tail[8] = {};
    std::memcpy(tail, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
    add_squares(vld1q_f32(tail), acc[0], acc[1]);
    add_squares(vld1q_f32(tail + 4), acc[2], acc[3]);
  }
  const float64x2_t s = vaddq_f64(vaddq_f64(acc[0], acc[1]), vaddq_f64(acc[2], acc[3]));
  return vgetq_lane_f64(s, 0) + vgetq_lane_f64(s, 1);
}

struct Coeffs {
  float32x4_t grad_mul, beta1, omb1, beta2, omb2, step_size, inv_sqrt_bc2, eps, decay;
};

// scalar_update's operations in its order, operands included (which NaN an operation returns
// depends on their order): vsqrtq_f32 and vdivq_f32 round correctly, as std::sqrt and / do.
inline void update4(float* p, const float* g, float* m, float* v, const Coeffs& c) {
  const float32x4_t gi = vmulq_f32(vld1q_f32(g), c.grad_mul);
  const float32x4_t mi = vaddq_f32(vmulq_f32(c.beta1, vld1q_f32(m)), vmulq_f32(c.omb1, gi));
  const float32x4_t vi = vaddq_f32(vmulq_f32(c.beta2, vld1q_f32(v)), vmulq_f32(c.omb2, vmulq_f32(gi, gi)));
  const float32x4_t denom = vaddq_f32(vmulq_f32(vsqrtq_f32(vi), c.inv_sqrt_bc2), c.eps);
  const float32x4_t pi = vsubq_f32(vmulq_f32(vld1q_f32(p), c.decay), vmulq_f32(c.step_size, vdivq_f32(mi, denom)));
  vst1q_f32(p, pi);
  vst1q_f32(m, mi);
  vst1q_f32(v, vi);
}

void update(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWCoeffs& k) {
  const Coeffs c{vdupq_n_f32(k.grad_mul),     vdupq_n_f32(k.beta1), vdupq_n_f32(k.one_minus_beta1),
                 vdupq_n_f32(k.beta2),        vdupq_n_f32(k.one_minus_beta2), vdupq_n_f32(k.step_size),
                 vdupq_n_f32(k.inv_sqrt_bc2), vdupq_n_f32(k.eps), vdupq_n_f32(k.decay)};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) update4(p + i, g + i, m + i, v + i, c);
  if (i < n) {
    const auto bytes = static_cast<std::size_t>(n - i) * sizeof(float);
    float tp[4] = {}, tg[4] = {}, tm[4] = {}, tv[4] = {};
    std::memcpy(tp, p + i, bytes);
    std::memcpy(tg, g + i, bytes);
    std::memcpy(tm, m + i, bytes);
    std::memcpy(tv, v + i, bytes);
    update4(tp, tg, tm, tv, c);
    std::memcpy(p + i, tp, bytes);
    std::memcpy(m + i, tm, bytes);
    std::memcpy(v + i, tv, bytes);
  }
}

inline uint32x4_t non_finite(uint32x4_t bits) {
  const uint32x4_t exp_bits = vdupq_n_u32(0x7f800000u);
  return vceqq_u32(vandq_u32(bits, exp_bits), exp_bits);
}

bool all_finite(const float* x, std::int64_t n) {
  uint32x4_t bad = vdupq_n_u32(0);
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) bad = vorrq_u32(bad, non_finite(vreinterpretq_u32_f32(vld1q_f32(x + i))));
  if (i < n) {
    std::uint32_t tail[4] = {};  // the padding is 0, which is finite
    std::memcpy(tail, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
    bad = vorrq_u32(bad, non_finite(vld1q_u32(tail)));
  }
  return vmaxvq_u32(bad) == 0;
}

}  // namespace

const AdamWKernels kNeonAdamWKernels = {sum_squares, update, all_finite};

}  // namespace orion::train::detail

#endif
