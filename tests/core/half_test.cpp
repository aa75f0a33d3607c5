// fp16 and bf16 conversion against references computed here from first principles: values from
// the bit fields with std::ldexp, and rounding by finding the two neighbouring representable
// values in double arithmetic and picking the nearer (ties to the even encoding).
#include "core/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"

namespace orion {
namespace {

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

// Value of a non-NaN binary16 pattern, from its fields.
double half_reference(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0x1f) v = std::numeric_limits<double>::infinity();
  else if (exponent == 0) v = std::ldexp(mantissa, -24);
  else v = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}

// Value of a non-NaN bfloat16 pattern, from its fields.
double bf16_reference(std::uint16_t b) {
  const int sign = b >> 15, exponent = (b >> 7) & 0xff, mantissa = b & 0x7f;
  double v;
  if (exponent == 0xff) v = std::numeric_limits<double>::infinity();
  else if (exponent == 0) v = std::ldexp(mantissa, -133);
  else v = std::ldexp(128 + mantissa, exponent - 134);
  return sign ? -v : v;
}

bool half_is_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// Round-to-nearest-even onto a 16-bit format, described by the values of its non-negative
// finite encodings 0..max_finite in order, and `beyond`, the value the next encoding would
// have if the exponent were unbounded (IEEE 754 overflow: a value that rounds to it or above
// becomes infinity, the encoding max_finite + 1).
struct Format {
  std::vector<double> values;
  double beyond;

  std::uint16_t round(float f) const {
    const double x = std::fabs(static_cast<double>(f));
    const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const auto inf = static_cast<std::uint16_t>(values.size());
    if (x >= beyond) return sign | inf;
    // The last encoding whose value is <= x, and the next one up.
    const auto it = std::upper_bound(values.begin(), values.end(), x);
    const auto lo = static_cast<std::uint16_t>(it - values.begin() - 1);
    const double lo_value = values[lo];
    const double hi_value = lo + 1u < values.size() ? values[lo + 1u] : beyond;
    const double below = x - lo_value, above = hi_value - x;  // both exact in double
    std::uint16_t r;
    if (below < above) r = lo;
    else if (above < below) r = static_cast<std::uint16_t>(lo + 1);
    else r = (lo & 1) ? static_cast<std::uint16_t>(lo + 1) : lo;
    return sign | r;
  }

  // Floats at every midpoint between neighbouring encodings (including the one between the
  // largest finite value and `beyond`) and one float ulp either side, with both signs.
  std::vector<float> midpoints() const {
    std::vector<float> out;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double next = i + 1 < values.size() ? values[i + 1] : beyond;
      const double mid = (values[i] + next) / 2;
      const auto f = static_cast<float>(mid);
      EXPECT_EQ(static_cast<double>(f), mid) << "midpoint not representable as float";
      for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e30f)}) {
        out.push_back(g);
        out.push_back(-g);
      }
    }
    return out;
  }
};

const Format& half_format() {
  static const Format format = [] {
    Format f;
    for (std::uint16_t h = 0; h < 0x7c00; ++h) f.values.push_back(half_reference(h));
    f.beyond = 65536.0;
    return f;
  }();
  return format;
}

const Format& bf16_format() {
  static const Format format = [] {
    Format f;
    for (std::uint16_t b = 0; b < 0x7f80; ++b) f.values.push_back(bf16_reference(b));
    f.beyond = std::ldexp(1.0, 128);
    return f;
  }();
  return format;
}

std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> v(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<std::uint16_t>(i);
  return v;
}

// A few million floats: uniform over all bit patterns (every exponent, NaNs included), and
// uniform over patterns whose exponent lies in or near the half range.
std::vector<float> random_floats() {
  std::mt19937_64 gen(12345);  // the engine's output is fixed by the standard
  std::vector<float> out;
  for (int i = 0; i < 2'000'000; ++i) out.push_back(float_of(static_cast<std::uint32_t>(gen())));
  for (int i = 0; i < 2'000'000; ++i) {
    const auto r = static_cast<std::uint32_t>(gen());
    const std::uint32_t exponent = 98 + (r >> 23) % 48;  // 2^-29 .. 2^18
    out.push_back(float_of((r & 0x807fffffu) | (exponent << 23)));
  }
  return out;
}

// ---- fp16 ----------------------------------------------------------------------------------

TEST(Half, KnownValues) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(-1e6f), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie, to even
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 steps: tie, to even (2)
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
}

TEST(Half, NaNStaysNaNWithItsSignAndIsQuieted) {
  // Payload only in the bits that are dropped: truncation alone would make it infinity.
  for (std::uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0x7f802000u}) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint16_t h = float_to_half(float_of(nan | sign));
      EXPECT_TRUE(half_is_nan(h)) << std::hex << (nan | sign) << " -> " << h;
      EXPECT_EQ(h & 0x8000, sign >> 16);
      EXPECT_NE(h & 0x0200, 0) << "not quiet";
    }
  }
  const float signalling = half_to_float(0xfc01);
  EXPECT_TRUE(std::isnan(signalling));
  EXPECT_TRUE(std::signbit(signalling));
  EXPECT_NE(bits_of(signalling) & 0x400000u, 0u) << "not quiet";
}

TEST(Half, ToFloatExhaustive) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float f = half_to_float(h);
    if (half_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), half_reference(h)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0
    }
  }
}

TEST(Half, RoundTripExhaustive) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const std::uint16_t back = float_to_half(half_to_float(h));
    if (half_is_nan(h)) {
      ASSERT_TRUE(half_is_nan(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Half, RoundsMidpointsToNearestEven) {
  const Format& format = half_format();
  const std::vector<float> floats = format.midpoints();
  ASSERT_EQ(floats.size(), 6u * 0x7c00);
  for (float f : floats)
    ASSERT_EQ(float_to_half(f), format.round(f)) << std::hexfloat << f;
}

TEST(Half, RoundsRandomFloats) {
  const Format& format = half_format();
  for (float f : random_floats()) {
    const std::uint16_t h = float_to_half(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(h)) << std::hex << bits_of(f);
      ASSERT_EQ((h & 0x8000) != 0, std::signbit(f));
    } else {
      ASSERT_EQ(h, format.round(f)) << std::hexfloat << f;
    }
  }
}

TEST(Half, UsesF16CWhenTheCpuHasIt) {
  EXPECT_EQ(half_uses_f16c(), cpu_features().f16c);
  std::cout << "bulk fp16 conversion uses F16C: " << (half_uses_f16c() ? "yes" : "no") << "\n";
}

// The bulk routines must agree bit for bit with the scalar ones (NaN payloads included) on
// every length, since the vector code handles the tail of each call separately.
void expect_bulk_matches_scalar(const std::vector<float>& floats) {
  const std::size_t n = floats.size();
  std::vector<std::uint16_t> halves(n);
  floats_to_halves(floats, halves);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(halves[i], float_to_half(floats[i])) << i << " " << std::hexfloat << floats[i];
  std::vector<float> back(n);
  halves_to_floats(halves, back);
  std::vector<float> rounded = floats;
  round_to_half(rounded);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bits_of(back[i]), bits_of(half_to_float(halves[i]))) << i;
    ASSERT_EQ(bits_of(rounded[i]), bits_of(half_to_float(float_to_half(floats[i])))) << i;
  }
}

TEST(Half, BulkMatchesScalarOnMidpointsAndRandomFloats) {
  expect_bulk_matches_scalar(half_format().midpoints());
  std::vector<float> floats = random_floats();
  floats.resize(1'000'001);  // odd: the last call has a tail
  expect_bulk_matches_scalar(floats);
}

TEST(Half, BulkHalvesToFloatsExhaustive) {
  const std::vector<std::uint16_t> halves = all_patterns();
  std::vector<float> floats(halves.size());
  halves_to_floats(halves, floats);
  for (std::size_t i = 0; i < halves.size(); ++i)
    ASSERT_EQ(bits_of(floats[i]), bits_of(half_to_float(halves[i]))) << std::hex << i;
}

TEST(Half, BulkHandlesEveryLengthAndOffset) {
  const std::vector<float> source = half_format().midpoints();
  for (std::size_t offset = 0; offset < 9; ++offset) {
    for (std::size_t n = 0; n <= 41; ++n) {
      const std::span<const float> in(source.data() + offset * 1000 + 7, n);
      // Sentinels after the output check that no call writes past its end.
      std::vector<std::uint16_t> halves(n + 8, 0xabcd);
      floats_to_halves(in, std::span<std::uint16_t>(halves.data(), n));
      std::vector<float> floats(n + 8, 42.0f);
      halves_to_floats(std::span<const std::uint16_t>(halves.data(), n),
                       std::span<float>(floats.data(), n));
      std::vector<float> rounded(in.begin(), in.end());
      rounded.resize(n + 8, 42.0f);
      round_to_half(std::span<float>(rounded.data(), n));
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(halves[i], float_to_half(in[i])) << n << " " << i;
        ASSERT_EQ(bits_of(floats[i]), bits_of(half_to_float(halves[i]))) << n << " " << i;
        ASSERT_EQ(bits_of(rounded[i]), bits_of(floats[i])) << n << " " << i;
      }
      for (std::size_t i = n; i < n + 8; ++i) {
        ASSERT_EQ(halves[i], 0xabcd);
        ASSERT_EQ(floats[i], 42.0f);
        ASSERT_EQ(rounded[i], 42.0f);
      }
    }
  }
}

// NaNs (signalling and quiet, payloads high and low), infinities, zeros, float and half
// subnormals and the overflow edge at every lane of a vector and of a tail, in both directions:
// the tails go through other code than the vectors.
TEST(Half, BulkKeepsSpecialValuesInEveryLaneAndTail) {
  std::vector<float> specials;
  for (std::uint32_t b : {0x7f800001u, 0x7fa00000u, 0x7fbfffffu, 0x7fc00000u, 0x7fc02001u, 0x7fffe000u, 0x7f800000u,
                          0x00000000u, 0x00000001u, 0x007fffffu, 0x33000000u, 0x33000001u, 0x387fe000u, 0x38800000u,
                          0x477fefffu, 0x477ff000u, 0x3f800000u, 0x3c001000u})
    for (std::uint32_t sign : {0u, 0x80000000u}) specials.push_back(float_of(b | sign));
  for (std::size_t n = 1; n <= 19; ++n) {
    for (std::size_t start = 0; start < specials.size(); ++start) {
      std::vector<float> floats(n);
      for (std::size_t i = 0; i < n; ++i) floats[i] = specials[(start + i) % specials.size()];
      expect_bulk_matches_scalar(floats);
    }
  }
  for (std::uint16_t base : {0x0000, 0x03f8, 0x7bf8, 0x7c00, 0x7df8, 0x7e00, 0x8000, 0xfc00, 0xfdf8, 0xfff0}) {
    for (std::size_t n = 0; n <= 17; ++n) {
      std::vector<std::uint16_t> halves(n);
      for (std::size_t i = 0; i < n; ++i) halves[i] = static_cast<std::uint16_t>(base + i);
      std::vector<float> floats(n);
      halves_to_floats(halves, floats);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(bits_of(floats[i]), bits_of(half_to_float(halves[i]))) << std::hex << halves[i] << " n " << n;
    }
  }
}

TEST(Half, RoundToHalfOverflowsToInfinity) {
  std::vector<float> v = {65504.0f, 65519.0f, 65520.0f, -70000.0f, 1e-9f, -1e-9f};
  round_to_half(v);
  EXPECT_EQ(v[0], 65504.0f);
  EXPECT_EQ(v[1], 65504.0f);
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits_of(v[4]), 0u);
  EXPECT_EQ(bits_of(v[5]), 0x80000000u);
}

TEST(Half, BulkRejectsMismatchedSizes) {
  std::vector<float> f(3);
  std::vector<std::uint16_t> h(4);
  EXPECT_THROW(floats_to_halves(f, h), Error);
  EXPECT_THROW(halves_to_floats(h, f), Error);
  EXPECT_THROW(floats_to_bf16s(f, h), Error);
  EXPECT_THROW(bf16s_to_floats(h, f), Error);
}

// ---- bf16 ----------------------------------------------------------------------------------

TEST(Bf16, KnownValues) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(0.1f), 0x3dcd);
  EXPECT_EQ(float_to_bf16(float_of(0x3f808000u)), 0x3f80);  // tie, to even (down)
  EXPECT_EQ(float_to_bf16(float_of(0x3f818000u)), 0x3f82);  // tie, to even (up)
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // overflows
  EXPECT_EQ(float_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bf16(float_of(0x00008000u)), 0x0000);  // subnormal tie, to even
  EXPECT_EQ(float_to_bf16(float_of(0x00008001u)), 0x0001);
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
}

TEST(Bf16, NaNStaysNaNWithItsSignAndIsQuieted) {
  for (std::uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7f810000u, 0x7fffffffu}) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint16_t b = float_to_bf16(float_of(nan | sign));
      EXPECT_TRUE(bf16_is_nan(b)) << std::hex << (nan | sign) << " -> " << b;
      EXPECT_EQ(b & 0x8000, sign >> 16);
      EXPECT_NE(b & 0x0040, 0) << "not quiet";
    }
  }
  const float signalling = bf16_to_float(0xff81);
  EXPECT_TRUE(std::isnan(signalling));
  EXPECT_TRUE(std::signbit(signalling));
  EXPECT_NE(bits_of(signalling) & 0x400000u, 0u) << "not quiet";
}

TEST(Bf16, ToFloatExhaustive) {
  const std::vector<std::uint16_t> patterns = all_patterns();
  std::vector<float> bulk(patterns.size());
  bf16s_to_floats(patterns, bulk);
  for (std::uint16_t b : patterns) {
    const float f = bf16_to_float(b);
    ASSERT_EQ(bits_of(bulk[b]), bits_of(f)) << std::hex << b;
    ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << b;
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(f), bf16_reference(b)) << std::hex << b;
    }
  }
}

TEST(Bf16, RoundTripExhaustive) {
  for (std::uint16_t b : all_patterns()) {
    const std::uint16_t back = float_to_bf16(bf16_to_float(b));
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(bf16_is_nan(back)) << std::hex << b;
      ASSERT_EQ(back & 0x8000, b & 0x8000) << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << std::hex << b;
    }
  }
}

TEST(Bf16, RoundsMidpointsAndRandomFloatsToNearestEven) {
  const Format& format = bf16_format();
  std::vector<float> floats = format.midpoints();
  ASSERT_EQ(floats.size(), 6u * 0x7f80);
  const std::vector<float> random = random_floats();
  floats.insert(floats.end(), random.begin(), random.end());
  floats.push_back(1.0f);  // odd length
  std::vector<std::uint16_t> bulk(floats.size());
  floats_to_bf16s(floats, bulk);
  std::vector<float> rounded = floats;
  round_to_bf16(rounded);
  for (std::size_t i = 0; i < floats.size(); ++i) {
    const float f = floats[i];
    const std::uint16_t b = float_to_bf16(f);
    ASSERT_EQ(bulk[i], b) << std::hexfloat << f;
    ASSERT_EQ(bits_of(rounded[i]), bits_of(bf16_to_float(b))) << std::hexfloat << f;
    if (std::isnan(f)) {
      ASSERT_TRUE(bf16_is_nan(b)) << std::hex << bits_of(f);
      ASSERT_EQ((b & 0x8000) != 0, std::signbit(f));
    } else {
      ASSERT_EQ(b, format.round(f)) << std::hexfloat << f;
    }
  }
}

}  // namespace
}  // namespace orion
