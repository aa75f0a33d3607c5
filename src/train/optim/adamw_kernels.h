#pragma once
// The per-element loops of AdamW and the loss scaler's check, one set per ISA (scalar here,
// AVX2 and AVX-512 in adamw_kernels_avx*.cpp, NEON in adamw_kernels_neon.cpp, chosen at run
// time as the gemv kernels are).
// They run on one chunk of one tensor; adamw.cpp splits the work into chunks and threads.
//
// Numerics. The update of an element is the same sequence of correctly rounded f32 operations
// on every path (no fused multiply-add: the files are compiled with -ffp-contract=off), so
// every ISA gives the same bits as the scalar path, wherever an element falls in a vector or
// a tail. The sum of squares accumulates in f64 (a finite f32 squared cannot overflow it, so
// the sum is finite exactly when every element is); its order of additions depends on the
// ISA but not on anything else.
#include <cstdint>

#include "exec/cpu/gemv.h"

namespace orion::train::detail {

// One step's coefficients, computed once in f64 and rounded to f32:
//   g = grad * grad_mul
//   m = beta1 * m + one_minus_beta1 * g
//   v = beta2 * v + one_minus_beta2 * (g * g)
//   p = p * decay - step_size * (m / (sqrt(v) * inv_sqrt_bc2 + eps))
struct AdamWCoeffs {
  float grad_mul = 1.0f;      // clip coefficient / grad_scale
  float beta1 = 0.9f, one_minus_beta1 = 0.1f;
  float beta2 = 0.95f, one_minus_beta2 = 0.05f;
  float step_size = 0.0f;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2 = 1.0f;  // 1 / sqrt(1 - beta2^t)
  float eps = 1e-8f;
  float decay = 1.0f;         // 1 - lr * weight_decay, or 1 for a parameter without decay
};

struct AdamWKernels {
  double (*sum_squares)(const float* x, std::int64_t n);
  void (*update)(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWCoeffs& c);
  bool (*all_finite)(const float* x, std::int64_t n);
};

extern const AdamWKernels kScalarAdamWKernels;
#if defined(__x86_64__)
extern const AdamWKernels kAvx2AdamWKernels;
extern const AdamWKernels kAvx512AdamWKernels;
#elif defined(__aarch64__)
extern const AdamWKernels kNeonAdamWKernels;
#endif

// The kernels of `isa`; throws orion::Error when this CPU cannot run it.
const AdamWKernels& adamw_kernels(exec::cpu::Isa isa);

}  // namespace orion::train::detail
