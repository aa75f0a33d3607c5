#pragma once
// Row-wise exp, softmax, GELU and SwiGLU's gating for the fast decoders and batched prefill, vectorised:
// std::exp is slow per element (docs/PERFORMANCE.md, "Smaller measurements behind the code"),
// and GPT-2 124M's prefill of 512 tokens takes 9.4 M of them for GELU and up to 20 M for
// softmax, a large share of its time beside the matrix products.
//
// exp is Cephes' single-precision polynomial after a Cody-Waite reduction by ln 2 (relative
// error below 1e-7 against exp in fp64 over [-87, 88]; inputs beyond are clamped, so exp of
// very negative numbers is about 1e-38 rather than 0; NaN stays NaN). The loops are plain C++
// compiled once per ISA (AVX-512, AVX2, baseline) and chosen at load time, and on arm64 once
// (the compiler vectorises them for NEON, every core's baseline). The file is built without
// contraction (CMakeLists.txt), so an element's result does not depend on whether it falls in
// a vector or in a loop's remainder. The graph executor keeps std::exp (activation.h): it is
// the reference.
#include <cstdint>

namespace orion::exec::cpu {

// x[i] = exp(x[i]).
void exp_rows(float* x, std::int64_t n);

// One row of scores in place: s[i] = exp(s[i] - max) / sum over the n entries (n >= 1).
void softmax_row(float* s, std::int64_t n);

// y[i] = gelu_tanh(y[i]) (activation.h's formula, with this file's exp).
void gelu_tanh_rows(float* y, std::int64_t n);

// SwiGLU's gating in place: g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i].
void silu_mul_rows(float* g, const float* u, std::int64_t n);

}  // namespace orion::exec::cpu
