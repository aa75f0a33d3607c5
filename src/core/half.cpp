#include "core/half.h"

#include <bit>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/cpu_features.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace orion {

namespace {

constexpr std::uint32_t kFloatAbs = 0x7fffffffu;
constexpr std::uint32_t kFloatInf = 0x7f800000u;

// The bf16 helpers are branch-free so that the compiler vectorises the bulk loops: no x86
// extension converts bf16 with round-to-nearest-even and exact subnormals (AVX512-BF16
// flushes subnormal inputs to zero).
inline std::uint16_t bf16_from_bits(std::uint32_t x) {
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even in one carry; bf16 shares
  // the float exponent, so subnormals and overflow to infinity come out of the same carry.
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  // Truncating a NaN whose payload is only in the low half would give infinity; the quiet
  // bit keeps it a NaN.
  const std::uint32_t quiet_nan = (x >> 16) | 0x40u;
  return static_cast<std::uint16_t>((x & kFloatAbs) > kFloatInf ? quiet_nan : rounded);
}

inline std::uint32_t bf16_to_bits(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  return (bits & kFloatAbs) > kFloatInf ? bits | 0x400000u : bits;  // quiet a signalling NaN
}

}  // namespace

std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & kFloatAbs;

  if (ax >= kFloatInf) {
    if (ax == kFloatInf) return static_cast<std::uint16_t>(sign | 0x7c00u);
    // Keep the top payload bits, as F16C does, and set the quiet bit: it also guarantees a
    // non-zero mantissa when the payload lives only in the low bits that are dropped.
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  // 65520 is the midpoint between 65504 (the largest half, odd mantissa) and 2^16; the tie
  // goes to the even side, which is infinity.
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);

  if (ax < 0x38800000u) {  // below 2^-14: a half subnormal or zero
    // Below 2^-25 a value is less than half of the smallest subnormal; exactly 2^-25 is a tie
    // that goes to the even neighbour, zero. Float subnormals all land here.
    if (ax <= 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t exponent = ax >> 23;  // 102..112
    const std::uint32_t mantissa = (ax & 0x7fffffu) | 0x800000u;
    // mantissa * 2^(exponent - 150) in units of the half subnormal step 2^-24.
    const std::uint32_t shift = 126u - exponent;  // 14..24
    std::uint32_t h = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // may carry into 0x400: 2^-14
    return static_cast<std::uint16_t>(sign | h);
  }

  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits. A carry out of the
  // mantissa correctly bumps the exponent; it cannot reach infinity (excluded above).
  std::uint32_t h = (ax >> 13) - (112u << 10);
  const std::uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0x1f) {
    // Quieting matches what F16C does with a signalling NaN, so both paths agree bit for bit.
    bits = mantissa == 0 ? sign | kFloatInf : sign | 0x7fc00000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // A half subnormal is a normal float: shift the leading one into the implicit position.
    std::uint32_t e = 113;  // float exponent field of 2^-14
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_bf16(float f) { return bf16_from_bits(std::bit_cast<std::uint32_t>(f)); }

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(bf16_to_bits(b)); }

namespace {

void check_sizes(const char* what, std::size_t in, std::size_t out) {
  if (in != out)
    throw Error(std::string(what) + ": input has " + std::to_string(in) +
                " values but output has room for " + std::to_string(out));
}

#if defined(__x86_64__) || defined(__i386__)

constexpr int kRoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Tails go through the same instructions via a padded copy, so that every element of a call
// is converted by one implementation whatever the length.
__attribute__((target("f16c,avx"))) void floats_to_halves_f16c(const float* in,
                                                               std::uint16_t* out,
                                                               std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRoundNearest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  if (i < n) {
    float tail_in[8] = {};
    std::uint16_t tail_out[8];
    std::memcpy(tail_in, in + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(tail_out),
                     _mm256_cvtps_ph(_mm256_loadu_ps(tail_in), kRoundNearest));
    std::memcpy(out + i, tail_out, (n - i) * sizeof(std::uint16_t));
  }
}

__attribute__((target("f16c,avx"))) void halves_to_floats_f16c(const std::uint16_t* in,
                                                               float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    std::uint16_t tail_in[8] = {};
    float tail_out[8];
    std::memcpy(tail_in, in + i, (n - i) * sizeof(std::uint16_t));
    _mm256_storeu_ps(tail_out,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail_in))));
    std::memcpy(out + i, tail_out, (n - i) * sizeof(float));
  }
}

__attribute__((target("f16c,avx"))) void round_to_half_f16c(float* values, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(values + i), kRoundNearest);
    _mm256_storeu_ps(values + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    float tail[8] = {};
    std::memcpy(tail, values + i, (n - i) * sizeof(float));
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(tail), kRoundNearest);
    _mm256_storeu_ps(tail, _mm256_cvtph_ps(h));
    std::memcpy(values + i, tail, (n - i) * sizeof(float));
  }
}

#elif defined(__aarch64__)

// FCVTN and FCVTL (vcvt_f16_f32, vcvt_f32_f16) are in every arm64 core's baseline, so there is
// no run-time check. With the FPCR as Linux and macOS start a process (round to nearest even,
// no flush to zero, NaNs propagated rather than replaced by the default NaN) they give the
// scalar reference's bits: subnormals exact, a NaN quieted with its sign and top payload bits
// kept, as F16C does. Tails go through a padded copy, as on x86.
inline float16x8_t halves_of(const float* in) {
  return vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(in)), vld1q_f32(in + 4));
}

inline void store_floats_of(float16x8_t h, float* out) {
  vst1q_f32(out, vcvt_f32_f16(vget_low_f16(h)));
  vst1q_f32(out + 4, vcvt_high_f32_f16(h));
}

void floats_to_halves_neon(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) vst1q_u16(out + i, vreinterpretq_u16_f16(halves_of(in + i)));
  if (i < n) {
    float tail_in[8] = {};
    std::uint16_t tail_out[8];
    std::memcpy(tail_in, in + i, (n - i) * sizeof(float));
    vst1q_u16(tail_out, vreinterpretq_u16_f16(halves_of(tail_in)));
    std::memcpy(out + i, tail_out, (n - i) * sizeof(std::uint16_t));
  }
}

void halves_to_floats_neon(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store_floats_of(vreinterpretq_f16_u16(vld1q_u16(in + i)), out + i);
  if (i < n) {
    std::uint16_t tail_in[8] = {};
    float tail_out[8];
    std::memcpy(tail_in, in + i, (n - i) * sizeof(std::uint16_t));
    store_floats_of(vreinterpretq_f16_u16(vld1q_u16(tail_in)), tail_out);
    std::memcpy(out + i, tail_out, (n - i) * sizeof(float));
  }
}

void round_to_half_neon(float* values, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store_floats_of(halves_of(values + i), values + i);
  if (i < n) {
    float tail[8] = {};
    std::memcpy(tail, values + i, (n - i) * sizeof(float));
    store_floats_of(halves_of(tail), tail);
    std::memcpy(values + i, tail, (n - i) * sizeof(float));
  }
}

#endif

bool use_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = cpu_features().f16c;
  return yes;
#else
  return false;
#endif
}

}  // namespace

void floats_to_halves(std::span<const float> in, std::span<std::uint16_t> out) {
  check_sizes("floats_to_halves", in.size(), out.size());
#if defined(__x86_64__) || defined(__i386__)
  if (use_f16c()) return floats_to_halves_f16c(in.data(), out.data(), in.size());
#elif defined(__aarch64__)
  return floats_to_halves_neon(in.data(), out.data(), in.size());
#endif
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
  check_sizes("halves_to_floats", in.size(), out.size());
#if defined(__x86_64__) || defined(__i386__)
  if (use_f16c()) return halves_to_floats_f16c(in.data(), out.data(), in.size());
#elif defined(__aarch64__)
  return halves_to_floats_neon(in.data(), out.data(), in.size());
#endif
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = half_to_float(in[i]);
}

void floats_to_bf16s(std::span<const float> in, std::span<std::uint16_t> out) {
  check_sizes("floats_to_bf16s", in.size(), out.size());
  const float* src = in.data();
  std::uint16_t* dst = out.data();
  for (std::size_t i = 0; i < in.size(); ++i)
    dst[i] = bf16_from_bits(std::bit_cast<std::uint32_t>(src[i]));
}

void bf16s_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
  check_sizes("bf16s_to_floats", in.size(), out.size());
  const std::uint16_t* src = in.data();
  float* dst = out.data();
  for (std::size_t i = 0; i < in.size(); ++i) dst[i] = std::bit_cast<float>(bf16_to_bits(src[i]));
}

void round_to_half(std::span<float> values) {
#if defined(__x86_64__) || defined(__i386__)
  if (use_f16c()) return round_to_half_f16c(values.data(), values.size());
#elif defined(__aarch64__)
  return round_to_half_neon(values.data(), values.size());
#endif
  for (float& v : values) v = half_to_float(float_to_half(v));
}

void round_to_bf16(std::span<float> values) {
  float* v = values.data();
  for (std::size_t i = 0; i < values.size(); ++i)
    v[i] = std::bit_cast<float>(bf16_to_bits(bf16_from_bits(std::bit_cast<std::uint32_t>(v[i]))));
}

bool half_uses_f16c() { return use_f16c(); }

}  // namespace orion
