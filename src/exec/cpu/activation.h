#pragma once
// Elementwise activations shared by the graph executor's kernels and the fused epilogues of
// the decode kernels (gemv.h), so that both compute the same function the same way.
#include <cmath>
#include <cstdint>

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
  if (act == Activation::gelu)
    for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_tanh(y[i]);
}

}  // namespace orion::exec::cpu
