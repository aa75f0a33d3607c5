// exp_rows, softmax_row, gelu_tanh_rows and silu_mul_rows against fp64 evaluations of their
// formulas, over the ranges decoding and prefill feed them, lengths that reach the loops' tails,
// and NaN; and the element-wise ones give an element the same bits wherever it falls in a row.
#include "exec/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/random.h"

namespace orion::exec::cpu {
namespace {

TEST(VectorMath, ExpWithin2e7RelativeOverFloatsRange) {
  std::vector<float> x;
  for (double v = -87.0; v <= 88.0; v += 0.00731) x.push_back(static_cast<float>(v));
  x.push_back(0.0f);
  std::vector<float> y = x;
  exp_rows(y.data(), static_cast<std::int64_t>(y.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    ASSERT_LE(std::fabs(y[i] - want), 2e-7 * want) << "exp(" << x[i] << ")";
  }
  // Beyond the range: clamped, never inf or a wrapped exponent; NaN stays NaN. At every place
  // of a row long enough for the vector loop of any ISA (and its tail), since a clone's vector
  // body and its scalar remainder are different code.
  constexpr int kRow = 40;
  for (int at = 0; at + 3 <= kRow; ++at) {
    std::vector<float> row(kRow, 0.5f);
    row[at] = -1000.0f;
    row[at + 1] = 1000.0f;
    row[at + 2] = std::nanf("");
    exp_rows(row.data(), kRow);
    EXPECT_GE(row[at], 0.0f) << at;
    EXPECT_LT(row[at], 1e-37f) << at;
    EXPECT_GT(row[at + 1], 1e38f) << at;
    EXPECT_TRUE(std::isfinite(row[at + 1])) << at;
    EXPECT_TRUE(std::isnan(row[at + 2])) << at;
    for (int i = 0; i < kRow; ++i) {
      if (i < at || i > at + 2) {
        ASSERT_NEAR(row[i], std::exp(0.5), 2e-7 * std::exp(0.5)) << at << " " << i;
      }
    }
  }
}

TEST(VectorMath, SoftmaxMatchesFp64OnEveryLength) {
  Rng rng(5);
  for (std::int64_t n : {1, 2, 15, 16, 17, 33, 257, 1024}) {
    std::vector<float> s(static_cast<std::size_t>(n));
    for (float& v : s) v = rng.normal() * 4.0f;
    std::vector<double> want(s.begin(), s.end());
    double mx = want[0], z = 0;
    for (double v : want) mx = std::max(mx, v);
    for (double& v : want) z += (v = std::exp(v - mx));
    softmax_row(s.data(), n);
    double total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      ASSERT_NEAR(s[k], want[k] / z, 1e-6 * want[k] / z + 1e-9) << "n " << n << " entry " << i;
      total += s[k];
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << n;
  }
}

TEST(VectorMath, GeluMatchesTheTanhFormulaInFp64) {
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 0.0037) x.push_back(static_cast<float>(v));
  std::vector<float> y = x;
  gelu_tanh_rows(y.data(), static_cast<std::int64_t>(y.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    const double want = 0.5 * v * (1.0 + std::tanh(u));
    // For negative x, gelu ~ x e^(2u): the float rounding of u (a few ulps) becomes a relative
    // error of about |2u| ulps in the result, whatever the exp.
    ASSERT_NEAR(y[i], want, 4e-7 * (1 + 2 * std::fabs(u)) * std::fabs(want) + 1e-12) << "gelu(" << v << ")";
  }
}

TEST(VectorMath, SiluMulMatchesFp64) {
  Rng rng(6);
  std::vector<float> g, u;
  for (double v = -80.0; v <= 80.0; v += 0.0061) {
    g.push_back(static_cast<float>(v));
    u.push_back(rng.normal());
  }
  std::vector<float> y = g;
  silu_mul_rows(y.data(), u.data(), static_cast<std::int64_t>(y.size()));
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double v = g[i];
    const double want = v / (1.0 + std::exp(-v)) * u[i];
    ASSERT_NEAR(y[i], want, 5e-7 * std::fabs(want) + 1e-37) << "silu(" << v << ") * " << u[i];
  }
}

// A vector body and its scalar remainder are different code (and each clone on x86 has both):
// an element at any place of a row of any length must get the bits it gets alone, where only
// the scalar code runs. The values include those the clamps and NaN handling select on.
TEST(VectorMath, ElementwiseRowsGiveEachElementTheSameBitsAnywhere) {
  Rng rng(7);
  std::vector<float> values = {-1000.0f, 1000.0f, std::nanf(""), -0.0f, 0.0f, -87.5f, 88.5f, 1e-30f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  while (values.size() < 48) values.push_back(rng.normal() * 6.0f);
  std::vector<float> others(values.size());
  for (float& o : others) o = rng.normal();
  const auto same = [](float got, float alone) {
    return std::isnan(alone) ? std::isnan(got) : std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(alone);
  };
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::size_t start = 0; start < values.size(); start += 5) {
      std::vector<float> row(n), u(n);
      for (std::size_t i = 0; i < n; ++i) {
        row[i] = values[(start + i) % values.size()];
        u[i] = others[(start + i) % values.size()];
      }
      std::vector<float> e = row, gelu = row, silu = row;
      exp_rows(e.data(), static_cast<std::int64_t>(n));
      gelu_tanh_rows(gelu.data(), static_cast<std::int64_t>(n));
      silu_mul_rows(silu.data(), u.data(), static_cast<std::int64_t>(n));
      for (std::size_t i = 0; i < n; ++i) {
        float e1 = row[i], gelu1 = row[i], silu1 = row[i];
        exp_rows(&e1, 1);
        gelu_tanh_rows(&gelu1, 1);
        silu_mul_rows(&silu1, &u[i], 1);
        ASSERT_TRUE(same(e[i], e1)) << "exp(" << row[i] << ") n " << n << " at " << i;
        ASSERT_TRUE(same(gelu[i], gelu1)) << "gelu(" << row[i] << ") n " << n << " at " << i;
        ASSERT_TRUE(same(silu[i], silu1)) << "silu(" << row[i] << ") n " << n << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace orion::exec::cpu
