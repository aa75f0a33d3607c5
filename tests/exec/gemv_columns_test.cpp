// gemv_f32_columns / gemv_f16_columns / gemv_q8_columns: each vector of the batched form is the
// single call's bits (gemv_f32, gemv_f16 on the same ISA; gemv_q8 with the same kernel variant),
// whatever its companions: n = 1 to 6 (one pass of the batched kernels, and a pass plus a
// remainder), odd row counts, every kind of column tail, W off its alignment (the kernels peel a
// head off every row), bias and GELU, 1 and 2 threads, and shapes that span several row blocks
// (gemv_columns.h). Every ISA this machine runs, every q8 variant. The q4 form has its own test
// (gemv_q4_test.cpp), as have gemv_f32_columns' larger shapes (gemv_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/quantize.h"

namespace orion::exec::cpu {
namespace {

std::vector<Isa> column_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

// A product's inputs: X holds six vectors (normal, with a few large elements so that q8's blocks
// get different scales), the bias one per row.
struct ColumnsInputs {
  std::int64_t rows, cols;
  std::vector<float> W, X, bias;
  ColumnsInputs(std::int64_t r, std::int64_t c, std::uint64_t seed)
      : rows(r), cols(c), W(static_cast<std::size_t>(r * c)), X(static_cast<std::size_t>(6 * c)),
        bias(static_cast<std::size_t>(r)) {
    Rng rng(seed);
    rng.fill_normal(W, 0.0f, 1.0f);
    for (float& v : X) v = rng.normal() * (rng.uniform() < 0.02f ? 20.0f : 1.0f);
    rng.fill_normal(bias, 0.0f, 1.0f);
  }
};

using Batched = std::function<void(const float* X, const float* bias, float* Y, std::int64_t n, ThreadPool& pool,
                                   Activation act)>;
using Single = std::function<void(const float* x, const float* bias, float* y, ThreadPool& pool, Activation act)>;

// For n = 1..6, with and without bias and GELU, on 1 and 2 threads: every Y_j of the batched form
// against the single call on X_j.
void expect_columns_as_single(const std::string& what, const ColumnsInputs& p, const Batched& batched,
                              const Single& single) {
  ThreadPool one(1), two(2);
  for (int variant = 0; variant < 2; ++variant) {
    const float* bias = variant == 1 ? p.bias.data() : nullptr;
    const Activation act = variant == 1 ? Activation::gelu : Activation::none;
    for (std::int64_t n = 1; n <= 6; ++n)
      for (ThreadPool* pool : {&one, &two}) {
        std::vector<float> Y(static_cast<std::size_t>(n * p.rows), std::nanf(""));
        batched(p.X.data(), bias, Y.data(), n, *pool, act);
        for (std::int64_t j = 0; j < n; ++j) {
          std::vector<float> y(static_cast<std::size_t>(p.rows));
          single(p.X.data() + j * p.cols, bias, y.data(), two, act);
          ASSERT_EQ(0, std::memcmp(y.data(), Y.data() + j * p.rows, y.size() * sizeof(float)))
              << what << " " << p.rows << "x" << p.cols << " n " << n << " vector " << j << " variant " << variant
              << " threads " << pool->size();
        }
      }
  }
}

// Rows: fewer than a group of four, odd counts past it, and 333 rows of 1008 columns, several
// row blocks of f32 and f16 on one thread. Columns: 3 (nothing but a tail), every step of the
// kernels' tails (16 * 21 + 5), and 768 and 1008, whole 16-column steps with W one element off
// a cache line, where every row gets an aligning head.
TEST(GemvColumns, F32AndF16EqualSingleCalls) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{3, 3}, {7, 16 * 21 + 5}, {45, 768}, {333, 1008}};
  std::uint64_t seed = 1;
  for (const auto& shape : shapes) {
    // Named copies, not a structured binding: clang 14 cannot capture those in the lambdas.
    const std::int64_t rows = shape.first, cols = shape.second;
    const ColumnsInputs p(rows, cols, seed++);
    std::vector<float> w(p.W.size() + 1);
    std::copy(p.W.begin(), p.W.end(), w.begin() + 1);
    std::vector<std::uint16_t> h(p.W.size() + 1);
    for (std::size_t i = 0; i < p.W.size(); ++i) h[i + 1] = float_to_half(p.W[i]);
    const float* W = w.data() + 1;  // 4 bytes past the allocation's alignment
    const std::uint16_t* H = h.data() + 1;
    for (Isa isa : column_isas()) {
      const std::string name(isa_name(isa));
      expect_columns_as_single(
          "f32 " + name, p,
          [&](const float* X, const float* bias, float* Y, std::int64_t n, ThreadPool& pool, Activation act) {
            gemv_f32_columns(W, X, Y, rows, cols, n, pool, isa, [&](std::int64_t r0, std::int64_t r1) {
              for (std::int64_t j = 0; j < n; ++j) {
                for (std::int64_t r = r0; r < r1 && bias; ++r) Y[j * rows + r] += bias[r];
                apply_activation(act, Y + j * rows + r0, r1 - r0);
              }
            });
          },
          [&](const float* x, const float* bias, float* y, ThreadPool& pool, Activation act) {
            gemv_f32(W, x, bias, y, rows, cols, pool, isa, act);
          });
      expect_columns_as_single(
          "f16 " + name, p,
          [&](const float* X, const float* bias, float* Y, std::int64_t n, ThreadPool& pool, Activation act) {
            gemv_f16_columns(H, X, bias, Y, rows, cols, n, pool, isa, act);
          },
          [&](const float* x, const float* bias, float* y, ThreadPool& pool, Activation act) {
            gemv_f16(H, x, bias, y, rows, cols, pool, isa, act);
          });
    }
  }
}

// Every q8 variant this CPU runs, blocks 32 and 64: rows ending half way through a 64-column
// chunk (96, 992: an odd number of the 256-bit kernels' halves), whole chunks (640, 768), and
// 333 rows of 992 columns, several row blocks. Then the public entry point for every Isa.
TEST(GemvColumns, Q8EqualsSingleCalls) {
  const std::tuple<std::int64_t, std::int64_t, int> shapes[] = {{3, 96, 32}, {7, 640, 64}, {45, 768, 32}, {333, 992, 32}};
  std::uint64_t seed = 50;
  for (const auto& shape : shapes) {
    const std::int64_t rows = std::get<0>(shape), cols = std::get<1>(shape);
    const int block = std::get<2>(shape);
    const ColumnsInputs p(rows, cols, seed++);
    std::vector<std::int8_t> q(p.W.size());
    std::vector<float> scales(p.W.size() / static_cast<std::size_t>(block));
    quantize_q8(p.W.data(), rows, cols, block, q.data(), scales.data());
    const Q8Weights W{q.data(), scales.data(), rows, cols, block};
    for (const detail::Q8Kernel& k : detail::q8_kernels()) {
      if (!k.supported()) continue;
      expect_columns_as_single(
          "q8 " + std::string(k.name), p,
          [&](const float* X, const float* bias, float* Y, std::int64_t n, ThreadPool& pool, Activation act) {
            detail::gemv_q8_columns_with(k, W, X, bias, Y, n, pool, act);
          },
          [&](const float* x, const float* bias, float* y, ThreadPool& pool, Activation act) {
            detail::gemv_q8_with(k, W, x, bias, y, pool, act);
          });
    }
    ThreadPool two(2);
    for (Isa isa : column_isas()) {
      std::vector<float> Y(static_cast<std::size_t>(5 * rows)), y(static_cast<std::size_t>(rows));
      gemv_q8_columns(W, p.X.data(), p.bias.data(), Y.data(), 5, two, isa);
      gemv_q8(W, p.X.data() + 4 * cols, p.bias.data(), y.data(), two, isa);
      ASSERT_EQ(0, std::memcmp(y.data(), Y.data() + 4 * rows, y.size() * sizeof(float))) << isa_name(isa);
    }
  }
}

// Every weight format with a batched kernel on each Isa that has one: the AVX-512, AVX2 and NEON
// paths take several vectors a pass for f32, f16 and every SIMD q8 variant.
TEST(GemvColumns, SimdPathsHaveBatchedKernels) {
  for (Isa isa : column_isas()) {
    const detail::RowKernels& k = detail::row_kernels(isa, "test");
    EXPECT_EQ(isa != Isa::scalar, k.f32_vectors != nullptr) << isa_name(isa);
    EXPECT_EQ(isa != Isa::scalar, k.f16_vectors != nullptr) << isa_name(isa);
  }
  for (const detail::Q8Kernel& k : detail::q8_kernels())
    EXPECT_EQ(k.isa != Isa::scalar && k.name.find("no-prefetch") == std::string_view::npos, k.vectors != nullptr) << k.name;
}

TEST(GemvColumns, EmptyShapesAndBadArguments) {
  ThreadPool pool(2);
  const float x[2] = {1.0f, 2.0f}, bias[3] = {1.0f, -2.0f, 3.0f};
  const std::uint16_t h[1] = {0x3c00};
  for (Isa isa : column_isas()) {
    float Y[6] = {9, 9, 9, 9, 9, 9};
    gemv_f16_columns(h, x, bias, Y, 3, 0, 2, pool, isa, Activation::none);  // no columns: the bias, for each vector
    EXPECT_EQ(Y[4], -2.0f);
    gemv_q8_columns({nullptr, nullptr, 3, 0, 32}, x, nullptr, Y, 2, pool, isa);  // no bias: zeros
    EXPECT_EQ(Y[5], 0.0f);
    Y[0] = 9;
    gemv_f16_columns(h, x, bias, Y, 3, 1, 0, pool, isa);  // no vectors: nothing written
    gemv_q8_columns({nullptr, nullptr, 3, 32, 32}, x, bias, Y, 0, pool, isa);
    EXPECT_EQ(Y[0], 9.0f);
  }
  std::vector<std::int8_t> q(96);
  std::vector<float> s(3), X(192), Y(4);
  EXPECT_THROW(gemv_f16_columns(h, X.data(), nullptr, Y.data(), 1, 1, -1, pool), Error);
  EXPECT_THROW(gemv_f16_columns(h, X.data(), nullptr, Y.data(), -1, 1, 1, pool), Error);
  EXPECT_THROW(gemv_q8_columns({q.data(), s.data(), 1, 96, 32}, X.data(), nullptr, Y.data(), -1, pool), Error);
  EXPECT_THROW(gemv_q8_columns({q.data(), s.data(), 1, 96, 48}, X.data(), nullptr, Y.data(), 1, pool), Error);
  for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon})
    if (!isa_supported(isa)) {
      EXPECT_THROW(gemv_f16_columns(h, X.data(), nullptr, Y.data(), 1, 1, 1, pool, isa), Error);
      EXPECT_THROW(gemv_q8_columns({q.data(), s.data(), 1, 32, 32}, X.data(), nullptr, Y.data(), 1, pool, isa), Error);
    }
}

}  // namespace
}  // namespace orion::exec::cpu
