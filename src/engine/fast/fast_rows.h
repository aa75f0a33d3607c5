#pragma once
// Row-wise pieces the fast paths share (GPT-2's token-by-token decode in gpt2_fast.cpp and
// batched prefill in gpt2_fast_prefill.cpp, Llama's in llama_fast.cpp and llama_fast_prefill.cpp), so that all compute them
// the same way. Sums run in
// several independent partial sums: a single running sum is a chain of dependent additions
// that compilers may not reorder, while partial sums vectorise with the baseline ISA and are at
// least as accurate.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <iterator>

namespace orion::engine {

// y = (x - mean) / sqrt(var + eps) * g + b over one row of n, in two float passes (the mean,
// then the variance of the deviations).
inline void layer_norm_row(const float* x, const float* g, const float* b, float eps, float* y, std::size_t n) {
  constexpr std::size_t kLanes = 16;
  float part[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) part[l] += x[i + l];
  float sum = 0;
  for (; i < n; ++i) sum += x[i];
  for (float p : part) sum += p;
  const float mean = sum / static_cast<float>(n);
  std::fill(std::begin(part), std::end(part), 0.0f);
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) part[l] += (x[i + l] - mean) * (x[i + l] - mean);
  float var = 0;
  for (; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  for (float p : part) var += p;
  const float inv = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
  for (i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * g[i] + b[i];
}

// y = x / sqrt(mean(x^2) + eps) * g over one row of n (Llama's RMSNorm), the squares summed in
// double as the graph executor's kernel sums them.
inline void rms_norm_row(const float* x, const float* g, double eps, float* y, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  double part[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) part[l] += static_cast<double>(x[i + l]) * x[i + l];
  double sq = 0;
  for (; i < n; ++i) sq += static_cast<double>(x[i]) * x[i];
  for (double p : part) sq += p;
  const auto inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
  for (i = 0; i < n; ++i) y[i] = x[i] * inv * g[i];
}

// Hugging Face's rotation of one head in place (Llama's RoPE): x * cos + rotate_half(x) * sin, with
// rotate_half(x) = concat(-x[D/2:], x[:D/2]); cos and sin are the position's table rows.
inline void rotate_half_head(float* x, const float* cos, const float* sin, std::int64_t D) {
  const std::int64_t half = D / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[half + i];
    x[i] = a * cos[i] + -b * sin[i];
    x[half + i] = b * cos[half + i] + a * sin[half + i];
  }
}

}  // namespace orion::engine
