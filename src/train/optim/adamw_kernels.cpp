// The portable AdamW loops and the ISA dispatch (adamw_kernels.h).
#include "train/optim/adamw_kernels.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"

namespace orion::train::detail {

namespace {

double scalar_sum_squares(const float* x, std::int64_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) acc[k] += static_cast<double>(x[i + k]) * x[i + k];
  for (; i < n; ++i) acc[0] += static_cast<double>(x[i]) * x[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void scalar_update(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWCoeffs& c) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * c.grad_mul;
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * gi;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * (gi * gi);
    const float denom = std::sqrt(vi) * c.inv_sqrt_bc2 + c.eps;
    p[i] = p[i] * c.decay - c.step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
  }
}

bool scalar_all_finite(const float* x, std::int64_t n) {
  // Integer tests of the exponent bits: compilers vectorise these without fast-math.
  std::uint32_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

const AdamWKernels kScalarAdamWKernels = {scalar_sum_squares, scalar_update, scalar_all_finite};

const AdamWKernels& adamw_kernels(exec::cpu::Isa isa) {
  if (!exec::cpu::isa_supported(isa))
    throw Error("AdamW: this CPU cannot run the " + std::string(exec::cpu::isa_name(isa)) + " path");
  switch (isa) {
#if defined(__x86_64__)
    case exec::cpu::Isa::avx512:
      return kAvx512AdamWKernels;
    case exec::cpu::Isa::avx2:
      return kAvx2AdamWKernels;
#elif defined(__aarch64__)
    case exec::cpu::Isa::neon:
      return kNeonAdamWKernels;
#endif
    default:
      return kScalarAdamWKernels;
  }
}

}  // namespace orion::train::detail
