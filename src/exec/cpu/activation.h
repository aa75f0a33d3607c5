#pragma once
// Elementwise activations: gelu_tanh is the graph executor's (the reference, with std::exp);
// the fused epilogues of the decode kernels (gemv.h) compute the same formula with the
// vectorised exp of vector_math.h (within 1e-6 relative of it).
#include <cmath>
#include <cstdint>

#include "exec/cpu/vector_math.h"

namespace orion::exec::cpu {

// sqrt(2 / pi), the constant of gelu's tanh approximation.
inline constexpr float kSqrt2OverPi = 0.7978845608028654f;

// GELU's tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
// x / (1 + e^(-2u)) (0.5 (1 + tanh u) is sigmoid(2u)): 1 + tanh(u) would cancel most of its
// digits for negative x.
inline float gelu_tanh(float x) {
  const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}

// What a fused kernel applies to its outputs after the bias.
enum class Activation : std::uint8_t { none, gelu };

inline void apply_activation(Activation act, float* y, std::int64_t n) {
  if (act == Activation::gelu) gelu_tanh_rows(y, n);
}

}  // namespace orion::exec::cpu
