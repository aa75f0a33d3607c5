#include "exec/cpu/vector_math.h"

#include <bit>

#include "exec/cpu/activation.h"

// One copy of each loop per ISA, picked by the dynamic loader (an ifunc): GCC on ELF x86-64.
// arm64 needs none: NEON is every core's baseline, and GCC 12 and clang 14 at -O3 vectorise all
// four loops four lanes wide as they are (objdump: fmul/fadd/fdiv on .4s, the clamps as fcm and
// bsl/bif), but only with -fno-trapping-math, as on x86; so no intrinsics are written for it.
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define ORION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ORION_CLONES
#endif

namespace orion::exec::cpu {

namespace {

// Beyond these, exp over- or underflows float's normal range.
constexpr float kExpLo = -87.3f, kExpHi = 88.3f;
// 1.5 * 2^23: adding and subtracting it rounds to an integer (halves to even), vectorised.
constexpr float kRound = 12582912.0f;

inline float exp_poly(float x) {
  // Clamped for the exponent (NaN becomes kExpLo there), NaN kept for the polynomial.
  const float xc = x > kExpLo ? (x < kExpHi ? x : kExpHi) : kExpLo;
  x = x < kExpLo ? kExpLo : x;
  x = x > kExpHi ? kExpHi : x;
  const float n = (xc * 1.44269504088896341f + kRound) - kRound;
  // x - n ln 2 in two steps (Cody-Waite): the first constant has few bits, so n * it is exact.
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t e = (static_cast<std::int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  return p * std::bit_cast<float>(e);
}

}  // namespace

ORION_CLONES void exp_rows(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = exp_poly(x[i]);
}

ORION_CLONES void softmax_row(float* s, std::int64_t n) {
  // Sixteen partial maxima and sums: one running value would be a dependency chain that
  // compilers may not reorder into vectors.
  constexpr int kLanes = 16;
  float part[kLanes];
  for (float& p : part) p = s[0];
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] = part[l] > s[i + l] ? part[l] : s[i + l];
  float mx = s[0];
  for (; i < n; ++i) mx = mx > s[i] ? mx : s[i];
  for (float p : part) mx = mx > p ? mx : p;
  for (float& p : part) p = 0.0f;
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += (s[i + l] = exp_poly(s[i + l] - mx));
  float sum = 0.0f;
  for (; i < n; ++i) sum += (s[i] = exp_poly(s[i] - mx));
  for (float p : part) sum += p;
  const float inv = 1.0f / sum;
  for (i = 0; i < n; ++i) s[i] *= inv;
}

ORION_CLONES void gelu_tanh_rows(float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = y[i];
    const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
    y[i] = x / (1.0f + exp_poly(-2.0f * u));
  }
}

ORION_CLONES void silu_mul_rows(float* g, const float* u, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + exp_poly(-g[i])) * u[i];
}

}  // namespace orion::exec::cpu
