// gemv_q4 / gemv_q4_columns / dequantize_q4_row: every q4 kernel variant this CPU runs against
// an fp64 product of the dequantised weights written here (nibbles decoded here too), within
// the bound gemv_q4.h states, and bit for bit against the scalar kernel; odd row counts, every
// group, one-group rows, rows that end part way through a kernel's register, bias and GELU, on
// 1 and 2 threads; the batched form bit for bit as single calls; the activation's digits; the
// errors for bad shapes.
#include "exec/cpu/gemv_q4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/thread_pool.h"
#include "error_of.h"

namespace orion::exec::cpu {
namespace {

// Random MLX-style weights: every nibble 0..15, scales in [0.001, 0.02), biases near -7.5
// scales (MLX's bias is the group's minimum, so w is centred near zero), x normal with a few
// large elements (so blocks of x get different units), and a bias vector.
struct Q4Case {
  std::int64_t rows, cols;
  int group;
  std::vector<std::uint8_t> q;
  std::vector<float> sb, x, bias;
  Q4Case(std::int64_t r, std::int64_t c, int g, std::uint64_t seed, std::int64_t vectors = 1)
      : rows(r), cols(c), group(g), q(static_cast<std::size_t>(r * c / 2)), sb(static_cast<std::size_t>(2 * r * (c / g))),
        x(static_cast<std::size_t>(c * vectors)), bias(static_cast<std::size_t>(r)) {
    Rng rng(seed);
    for (auto& b : q) b = static_cast<std::uint8_t>(rng.next_u64());
    for (std::size_t i = 0; i < sb.size(); i += 2) {
      sb[i] = rng.uniform(0.001f, 0.02f);
      sb[i + 1] = -7.5f * sb[i] + rng.uniform(-0.01f, 0.01f);
    }
    for (float& v : x) v = rng.normal() * (rng.uniform() < 0.02f ? 20.0f : 1.0f);
    for (float& v : bias) v = rng.normal();
  }
  Q4Weights weights() const { return {q.data(), sb.data(), rows, cols, group}; }
  int nibble(std::int64_t r, std::int64_t c) const {
    const std::uint8_t byte = q[static_cast<std::size_t>(r * cols / 2 + c / 2)];
    return c % 2 == 0 ? byte & 0x0f : byte >> 4;
  }
  double scale(std::int64_t r, std::int64_t c) const { return sb[static_cast<std::size_t>(2 * (r * (cols / group) + c / group))]; }
  double offset(std::int64_t r, std::int64_t c) const { return sb[static_cast<std::size_t>(2 * (r * (cols / group) + c / group) + 1)]; }
};

// The fp64 product of vector j with the exact weights s * q + b, and per row the bound the
// header states: the activation's quantisation, sum |s q| u / 2 with u = absmax / 16256 of the
// column's block of 32, plus the f32 arithmetic, taken as 1e-5 of the terms' magnitudes.
struct Q4Reference {
  std::vector<double> y, bound;
  double scale = 0;  // max |y|
};

Q4Reference q4_reference(const Q4Case& p, const float* x, bool with_bias) {
  Q4Reference ref;
  for (std::int64_t r = 0; r < p.rows; ++r) {
    double y = with_bias ? p.bias[static_cast<std::size_t>(r)] : 0.0, quantisation = 0, magnitude = 0;
    for (std::int64_t c = 0; c < p.cols; ++c) {
      const double sq = p.scale(r, c) * p.nibble(r, c);
      y += (sq + p.offset(r, c)) * x[c];
      double absmax = 0;
      for (std::int64_t i = c / 32 * 32; i < c / 32 * 32 + 32; ++i) absmax = std::max(absmax, std::fabs(static_cast<double>(x[i])));
      quantisation += std::fabs(sq) * absmax / 16256 / 2;
      magnitude += (std::fabs(sq) + std::fabs(p.offset(r, c))) * std::fabs(x[c]);
    }
    ref.y.push_back(y);
    ref.bound.push_back(quantisation * 1.001 + 1e-5 * (magnitude + std::fabs(y)));
    ref.scale = std::max(ref.scale, std::fabs(y));
  }
  return ref;
}

std::vector<Isa> q4_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

const detail::Q4Kernel& q4_scalar() { return detail::q4_kernels().back(); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The scalar kernel within the bound of the fp64 product and, given enough rows, within 5e-4
// normwise; every variant
// this CPU runs, and the public entry point for every Isa, the scalar kernel's bits, on 1 and 2
// threads; with and without bias.
void check_q4(const Q4Case& p) {
  ThreadPool one(1), two(2);
  const Q4Weights W = p.weights();
  for (bool with_bias : {false, true}) {
    const float* bias = with_bias ? p.bias.data() : nullptr;
    const std::string what = std::to_string(p.rows) + "x" + std::to_string(p.cols) + " group " +
                             std::to_string(p.group) + (with_bias ? " bias" : "");
    std::vector<float> want(static_cast<std::size_t>(p.rows));
    detail::gemv_q4_with(q4_scalar(), W, p.x.data(), bias, want.data(), one, Activation::none);
    ASSERT_EQ(q4_scalar().name, "scalar");
    const Q4Reference ref = q4_reference(p, p.x.data(), with_bias);
    double err = 0;
    for (std::int64_t r = 0; r < p.rows; ++r) {
      const auto i = static_cast<std::size_t>(r);
      ASSERT_LE(std::fabs(want[i] - ref.y[i]), ref.bound[i]) << what << " row " << r;
      err = std::max(err, std::fabs(want[i] - ref.y[i]));
    }
    if (p.rows >= 64) {  // a few rows' largest |y| may be small by chance
      EXPECT_LE(err, 5e-4 * ref.scale) << what;
    }
    for (const detail::Q4Kernel& k : detail::q4_kernels()) {
      if (!k.supported()) continue;
      for (ThreadPool* pool : {&one, &two}) {
        std::vector<float> y(want.size(), std::nanf(""));
        detail::gemv_q4_with(k, W, p.x.data(), bias, y.data(), *pool, Activation::none);
        ASSERT_TRUE(same_bits(want, y)) << what << ": " << k.name << " on " << pool->size() << " threads differs from scalar";
      }
    }
    for (Isa isa : q4_isas()) {
      std::vector<float> y(want.size(), std::nanf(""));
      gemv_q4(W, p.x.data(), bias, y.data(), two, isa);
      ASSERT_TRUE(same_bits(want, y)) << what << " " << isa_name(isa);
    }
  }
}

// Rows: below, at and past the four-row groups; columns: one group, and widths that end a
// quarter, half and three quarters of the way through a 128-column chunk (and a 64-column AVX2
// register), and past several chunks.
TEST(GemvQ4, EveryKernelWithinTheBoundAndAsScalar) {
  std::uint64_t seed = 400;
  for (int group : {32, 64, 128})
    for (std::int64_t rows : {1, 3, 4, 7, 17})
      for (std::int64_t cols : {std::int64_t{group}, std::int64_t{2 * group}, std::int64_t{3 * group}, std::int64_t{384 + group},
                                std::int64_t{1024}})
        check_q4(Q4Case(rows, cols, group, seed++));
}

// Large enough to go to both threads in several chunks, with a row count that leaves rows after
// the last group of four in every chunk.
TEST(GemvQ4, LargeMatrixOnTwoThreads) {
  for (int group : {32, 64, 128}) check_q4(Q4Case(333, 1024 + 128, group, 70 + static_cast<std::uint64_t>(group)));
}

// The fused GELU is gelu_tanh_rows of the unfused result, bit for bit.
TEST(GemvQ4, FusedGeluEqualsGeluOfTheProduct) {
  ThreadPool two(2);
  const Q4Case p(301, 256, 64, 9);
  for (Isa isa : q4_isas()) {
    std::vector<float> plain(static_cast<std::size_t>(p.rows)), fused(plain.size());
    gemv_q4(p.weights(), p.x.data(), p.bias.data(), plain.data(), two, isa);
    gemv_q4(p.weights(), p.x.data(), p.bias.data(), fused.data(), two, isa, Activation::gelu);
    gelu_tanh_rows(plain.data(), p.rows);
    ASSERT_TRUE(same_bits(plain, fused)) << isa_name(isa);
  }
}

// Each vector of the batched form is the single call's bits, whatever its companions: n = 1..6
// (one pass of the batched kernels, and a pass plus a remainder), with and without bias and GELU,
// on every kernel; the larger shapes span several row blocks.
TEST(GemvQ4, ColumnsEqualSingleCalls) {
  ThreadPool one(1), two(2);
  for (const auto& [rows, cols, group] :
       {std::tuple<std::int64_t, std::int64_t, int>{7, 96, 32}, {45, 640, 64}, {400, 2048, 32}, {333, 1024 + 128 + 32, 32}}) {
    const Q4Case p(rows, cols, group, static_cast<std::uint64_t>(rows + cols), 6);
    const Q4Weights W = p.weights();
    for (const detail::Q4Kernel& k : detail::q4_kernels()) {
      if (!k.supported()) continue;
      for (int variant = 0; variant < 2; ++variant) {
        const float* bias = variant == 1 ? p.bias.data() : nullptr;
        const Activation act = variant == 1 ? Activation::gelu : Activation::none;
        for (std::int64_t n = 1; n <= 6; ++n) {
          ThreadPool& pool = n % 2 == 0 ? one : two;
          std::vector<float> Y(static_cast<std::size_t>(n * rows), std::nanf(""));
          detail::gemv_q4_columns_with(k, W, p.x.data(), bias, Y.data(), n, pool, act);
          for (std::int64_t j = 0; j < n; ++j) {
            std::vector<float> y(static_cast<std::size_t>(rows)), Yj(Y.begin() + j * rows, Y.begin() + (j + 1) * rows);
            detail::gemv_q4_with(k, W, p.x.data() + j * cols, bias, y.data(), two, act);
            ASSERT_TRUE(same_bits(y, Yj)) << k.name << " " << rows << "x" << cols << " n " << n << " vector " << j
                                          << " variant " << variant;
          }
        }
      }
    }
    for (Isa isa : q4_isas()) {  // the public entry point: the same
      std::vector<float> Y(static_cast<std::size_t>(3 * rows)), y(static_cast<std::size_t>(rows));
      gemv_q4_columns(W, p.x.data(), p.bias.data(), Y.data(), 3, two, isa);
      gemv_q4(W, p.x.data() + 2 * cols, p.bias.data(), y.data(), one, isa);
      ASSERT_TRUE(same_bits(y, std::vector<float>(Y.begin() + 2 * rows, Y.end()))) << isa_name(isa);
    }
  }
}

// Rows of identical weights give identical bits, wherever they fall: in a group of four or
// after, at the start or the end of a thread's chunk.
TEST(GemvQ4, IdenticalRowsGiveIdenticalBits) {
  ThreadPool two(2);
  Q4Case p(1000, 256 + 32, 32, 5);
  for (std::int64_t r = 1; r < p.rows; ++r) {
    std::copy_n(p.q.begin(), p.cols / 2, p.q.begin() + r * p.cols / 2);
    std::copy_n(p.sb.begin(), 2 * p.cols / p.group, p.sb.begin() + 2 * r * p.cols / p.group);
  }
  for (const detail::Q4Kernel& k : detail::q4_kernels()) {
    if (!k.supported()) continue;
    std::vector<float> y(static_cast<std::size_t>(p.rows));
    detail::gemv_q4_with(k, p.weights(), p.x.data(), nullptr, y.data(), two, Activation::none);
    for (std::int64_t r = 1; r < p.rows; ++r) ASSERT_EQ(0, std::memcmp(&y[0], &y[static_cast<std::size_t>(r)], sizeof(float))) << k.name << " row " << r;
  }
}

// dequantize_q4_row: fma(s, q, b), the exact s * q + b rounded once, with the nibbles in MLX's
// order (column 2k in byte k's low nibble).
TEST(GemvQ4, DequantizeRow) {
  const Q4Case p(3, 256, 64, 11);
  std::vector<float> row(static_cast<std::size_t>(p.cols));
  for (std::int64_t r = 0; r < p.rows; ++r) {
    dequantize_q4_row(p.weights(), r, row.data());
    for (std::int64_t c = 0; c < p.cols; ++c)
      ASSERT_EQ(row[static_cast<std::size_t>(c)], static_cast<float>(p.scale(r, c) * p.nibble(r, c) + p.offset(r, c))) << r << " " << c;
  }
  // One byte by hand: 0x5a is column 0 = 10, column 1 = 5.
  const std::uint8_t q[16] = {0x5a};
  const float sb[2] = {0.5f, -1.0f};
  float out[32];
  dequantize_q4_row({q, sb, 1, 32, 32}, 0, out);
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[1], 1.5f);
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_THROW(dequantize_q4_row({q, sb, 1, 32, 32}, 1, out), Error);
}

// The digits: n = 128 hi + lo within the stated ranges, |x - u n| <= u / 2 (up to the f32
// rounding of x * (16256 / absmax)), the block's largest |x| at +-16256, zero padding, the
// lanes' units and the groups' sums.
TEST(GemvQ4, ActivationDigits) {
  Q4Activation a;
  for (std::int64_t cols : {32, 96, 128, 1024 + 64}) {
    const Q4Case p(1, cols, 32, static_cast<std::uint64_t>(cols));
    quantize_q4_activation(p.x.data(), cols, 32, a);
    ASSERT_EQ(a.padded % kQ4Chunk, 0);
    ASSERT_LT(a.padded - cols, kQ4Chunk);
    for (std::int64_t c = 0; c < a.padded; ++c) {
      const std::int8_t* chunk = a.digits.data() + c / 128 * 256 + (c % 2) * 64 + c % 128 / 2;
      const int hi = chunk[0], lo = chunk[128];
      ASSERT_GE(hi, -127);
      ASSERT_LE(hi, 127);
      ASSERT_GE(lo, -64);
      ASSERT_LE(lo, 63);
      ASSERT_EQ(a.value(c), 128 * hi + lo);
      if (c >= cols) {
        ASSERT_EQ(a.value(c), 0) << c;
        continue;
      }
      float absmax = 0;
      for (std::int64_t i = c / 32 * 32; i < c / 32 * 32 + 32; ++i) absmax = std::max(absmax, std::fabs(p.x[static_cast<std::size_t>(i)]));
      const double u = a.lane_unit[static_cast<std::size_t>(c / 8)];
      ASSERT_EQ(u, absmax / 16256.0f);
      ASSERT_LE(std::fabs(p.x[static_cast<std::size_t>(c)] - u * a.value(c)), u * 0.5001) << c;
      if (std::fabs(p.x[static_cast<std::size_t>(c)]) == absmax) {
        ASSERT_EQ(std::abs(a.value(c)), 16256);
      }
    }
    for (std::int64_t g = cols / 8; g < a.padded / 8; ++g) ASSERT_EQ(a.lane_unit[static_cast<std::size_t>(g)], 0.0f);
    for (int group : {32, 64, 128}) {
      if (cols % group != 0) continue;
      quantize_q4_activation(p.x.data(), cols, group, a);
      const std::int64_t padded_groups = (cols / group + 15) / 16 * 16;
      ASSERT_GE(static_cast<std::int64_t>(a.group_sum.size()), padded_groups);
      for (std::int64_t k = 0; k < padded_groups; ++k) {
        double s = 0;
        for (std::int64_t c = k * group; c < (k + 1) * group && c < cols; ++c) s += p.x[static_cast<std::size_t>(c)];
        ASSERT_NEAR(a.group_sum[static_cast<std::size_t>(k)], s, 1e-5 * (1 + std::fabs(s))) << group << " " << k;
      }
    }
  }
}

TEST(GemvQ4, EmptyShapes) {
  ThreadPool pool(2);
  const float x[1] = {2.0f}, bias[3] = {1.0f, 2.0f, 3.0f};
  for (Isa isa : q4_isas()) {
    float y[3] = {9, 9, 9};
    gemv_q4({nullptr, nullptr, 3, 0, 32}, x, bias, y, pool, isa);  // no columns: the bias
    EXPECT_EQ(y[2], 3.0f);
    float Y[6] = {9, 9, 9, 9, 9, 9};
    gemv_q4_columns({nullptr, nullptr, 3, 0, 64}, x, nullptr, Y, 2, pool, isa);  // no bias: zeros
    EXPECT_EQ(Y[5], 0.0f);
    y[0] = 9;
    const std::vector<float> x32(32, 1.0f);  // x holds cols floats even when there are no rows
    gemv_q4({nullptr, nullptr, 0, 32, 32}, x32.data(), nullptr, y, pool, isa);  // no rows: nothing written
    EXPECT_EQ(y[0], 9.0f);
  }
}

TEST(GemvQ4, RejectsBadShapes) {
  ThreadPool pool(1);
  std::vector<std::uint8_t> q(64);
  std::vector<float> sb(8), x(128), y(2);
  const auto message = [&](Q4Weights W) {
    return testing::error_of([&] { gemv_q4(W, x.data(), nullptr, y.data(), pool); });
  };
  EXPECT_NE(message({q.data(), sb.data(), 1, 96, 48}).find("group 48 (must be 32, 64 or 128)"), std::string::npos);
  EXPECT_NE(message({q.data(), sb.data(), 1, 128, 256}).find("group 256"), std::string::npos);
  EXPECT_NE(message({q.data(), sb.data(), 1, 96, 64}).find("cols 96 is not a multiple of the group 64"), std::string::npos);
  EXPECT_NE(message({q.data(), sb.data(), 1, 33, 32}).find("cols 33 is odd"), std::string::npos);
  EXPECT_NE(message({q.data(), sb.data(), -1, 32, 32}).find("negative size"), std::string::npos);
  EXPECT_NE(testing::error_of([&] { gemv_q4_columns({q.data(), sb.data(), 1, 96, 64}, x.data(), nullptr, y.data(), 1, pool); })
                .find("gemv_q4_columns: cols 96 is not a multiple"),
            std::string::npos);
  EXPECT_THROW(gemv_q4_columns({q.data(), sb.data(), 1, 32, 32}, x.data(), nullptr, y.data(), -1, pool), Error);
  EXPECT_THROW(dequantize_q4_row({q.data(), sb.data(), 1, 40, 32}, 0, y.data()), Error);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
    if (!isa_supported(isa)) {
      EXPECT_THROW(gemv_q4({q.data(), sb.data(), 1, 32, 32}, x.data(), nullptr, y.data(), pool, isa), Error);
    }
  for (const detail::Q4Kernel& k : detail::q4_kernels())
    if (!k.supported()) {
      EXPECT_THROW(detail::gemv_q4_with(k, {q.data(), sb.data(), 1, 32, 32}, x.data(), nullptr, y.data(), pool, Activation::none),
                   Error)
          << k.name;
    }
}

TEST(GemvQ4, VariantsCoverEveryIsa) {
  for (Isa isa : q4_isas()) {
    bool found = false;
    for (const detail::Q4Kernel& k : detail::q4_kernels()) found = found || (k.isa == isa && k.supported());
    EXPECT_TRUE(found) << isa_name(isa);
  }
}

}  // namespace
}  // namespace orion::exec::cpu
