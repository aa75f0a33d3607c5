// parse_real's fallback (strtod in the C locale, what libc++ before LLVM 20 builds use) against
// std::from_chars where the library has both: the same value bits, end and error on numbers
// printed every way and on the malformed and out-of-range forms the parsers must refuse.
#include "core/parse_real.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace orion {
namespace {

struct Parsed {
  std::errc ec;
  std::ptrdiff_t used;
  double value;
};

template <class T>
Parsed strtod_path(const std::string& s, std::chars_format fmt) {
  T v = T(-12345);
  const auto r = parse_real_strtod(s.data(), s.data() + s.size(), v, fmt);
  return {r.ec, r.ptr - s.data(), static_cast<double>(v)};
}

TEST(ParseReal, KnownValuesAndRefusals) {
  double d = 0;
  const std::string a = "-2.5e3,";
  auto r = parse_real(a.data(), a.data() + a.size(), d);
  EXPECT_EQ(r.ec, std::errc());
  EXPECT_EQ(r.ptr, a.data() + 6);
  EXPECT_EQ(d, -2500.0);
  const std::string h = "1.8p1";
  r = parse_real(h.data(), h.data() + h.size(), d, std::chars_format::hex);
  EXPECT_EQ(r.ec, std::errc());
  EXPECT_EQ(d, 3.0);
  float f = 0;
  const std::string big = "1e39";
  EXPECT_EQ(parse_real(big.data(), big.data() + big.size(), f).ec, std::errc::result_out_of_range);
  for (const std::string s : {"+1", " 1", "", "x", "-"})
    EXPECT_EQ(parse_real(s.data(), s.data() + s.size(), d).ec, std::errc::invalid_argument) << s;
  const std::string general_hex = "0x1p3";
  r = parse_real(general_hex.data(), general_hex.data() + general_hex.size(), d);
  EXPECT_EQ(r.ptr, general_hex.data() + 1) << "general format reads the 0 of 0x only";
}

#if defined(__cpp_lib_to_chars)
std::vector<std::string> awkward_texts() {
  return {"", "+1", " 1", "-", ".", "e5", "1e", "1e+", "1e400", "-1e400", "1e-400", "4.9e-324", "2.2250738585072014e-308",
          "1e-310", "3.4028236e38", "1e-46", "inf", "-inf", "INF", "infinity", "Infinity", "infinit", "nan", "-nan", "NaN",
          "nan(123)", "0x1p3", "-0x10", "1.5abc", ".5", "5.", "-0", "00012", "1_000", "1e5x", "0.1 2", "1,5", "--1"};
}

template <class T>
void expect_same(const std::string& s, std::chars_format fmt) {
  T want = T(-12345);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), want, fmt);
  const Parsed got = strtod_path<T>(s, fmt);
  ASSERT_EQ(got.ec, r.ec) << "'" << s << "'";
  if (r.ec == std::errc::invalid_argument) return;  // where it stops is unspecified then
  ASSERT_EQ(got.used, r.ptr - s.data()) << "'" << s << "'";
  if (std::isnan(want)) {
    // The sign of "-nan" is not compared: GCC 12's from_chars drops it, strtod keeps it, and
    // Orion's parsers read inf and nan themselves before they call parse_real.
    EXPECT_TRUE(std::isnan(got.value)) << s;
  } else {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got.value), std::bit_cast<std::uint64_t>(static_cast<double>(want))) << "'" << s << "'";
  }
}

TEST(ParseReal, TheFallbackAgreesWithFromChars) {
  for (const std::string& s : awkward_texts()) {
    for (auto fmt : {std::chars_format::general, std::chars_format::hex}) {
      expect_same<double>(s, fmt);
      expect_same<float>(s, fmt);
    }
  }
  std::mt19937_64 rng(7);
  char buf[64];
  for (int i = 0; i < 20000; ++i) {
    const double v = std::bit_cast<double>(rng());
    if (!std::isfinite(v)) continue;
    for (const char* format : {"%.17g", "%.6g", "%.3e", "%.40f"}) {
      std::snprintf(buf, sizeof buf, format, v);
      expect_same<double>(buf, std::chars_format::general);
      expect_same<float>(buf, std::chars_format::general);
    }
    std::snprintf(buf, sizeof buf, "%a", v);  // "0x1.8p+1" or "-0x1.8p+1": from_chars' hex has no 0x
    std::string hex = buf;
    hex.erase(hex[0] == '-' ? 1 : 0, 2);
    expect_same<double>(hex, std::chars_format::hex);
    expect_same<float>(hex, std::chars_format::hex);
  }
}
#endif

}  // namespace
}  // namespace orion
