// gemv_f32 / gemv_f16 / gemv_q8 against a naive fp64 product written here, for every ISA this
// machine runs (scalar always), on sizes that reach every row and column tail of the kernels,
// unaligned pointers, with and without bias, on 1 and 2 threads. The q8 variants (VNNI and
// not on x86, SDOT and not on arm64) are each held to the scalar path bit for bit.
#include "exec/cpu/gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/quantize.h"

namespace orion::exec::cpu {
namespace {

const Isa kAllIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon};

std::vector<Isa> isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

std::string label(Isa isa, std::int64_t rows, std::int64_t cols, bool bias, int threads) {
  return std::string(isa_name(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
         (bias ? " bias" : "") + " threads " + std::to_string(threads);
}

// max |y - ref| / max |ref| (absolute when ref is all zero).
double normwise_error(const float* y, const std::vector<double>& ref) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(y[i]) - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return scale > 0 ? err / scale : err;
}

// y = W x (+ bias) in fp64, W given as floats row-major.
std::vector<double> reference(const std::vector<float>& W, const float* x, const float* bias,
                              std::int64_t rows, std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c)
      s += static_cast<double>(W[static_cast<std::size_t>(r * cols + c)]) * x[c];
    y[static_cast<std::size_t>(r)] = s + (bias ? bias[r] : 0.0);
  }
  return y;
}

// A buffer whose data() starts `offset` elements past a 64-byte boundary, so that tests choose
// the alignment the kernels see.
template <class T>
class Offset {
 public:
  Offset(std::size_t n, std::size_t offset) : store_(n + offset + 64 / sizeof(T) + 1) {
    const auto addr = reinterpret_cast<std::uintptr_t>(store_.data());
    const std::size_t skip = ((64 - addr % 64) % 64) / sizeof(T);
    data_ = store_.data() + skip + offset;
    n_ = n;
  }
  Offset(const Offset&) = delete;
  Offset& operator=(const Offset&) = delete;
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  std::size_t size() const { return n_; }

 private:
  std::vector<T> store_;
  T* data_;
  std::size_t n_;
};

const std::int64_t kSizes[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 127, 768 + 3};

struct Problem {
  std::int64_t rows, cols;
  std::vector<float> W;  // the weights as the kernel sees them, as floats (for the reference)
  Offset<float> x, bias;
  Problem(std::int64_t r, std::int64_t c, std::uint64_t seed, std::size_t offset)
      : rows(r), cols(c), W(static_cast<std::size_t>(r * c)),
        x(static_cast<std::size_t>(c), offset), bias(static_cast<std::size_t>(r), offset) {
    Rng rng(seed);
    rng.fill_normal(W, 0.0f, 1.0f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng.normal();
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = rng.normal();
  }
};

// Runs `run(isa, bias, pool, y)` for every ISA, bias or not, 1 and 2 threads; checks each
// against the fp64 reference within 1e-5 normwise, that a given ISA gives the same bits on
// 1 and 2 threads, and that the ISAs agree with each other.
template <class Run>
void check_all(const Problem& p, const std::vector<float>& effective_W, std::size_t y_offset,
               const Run& run) {
  ThreadPool one(1), two(2);
  for (bool with_bias : {false, true}) {
    const float* bias = with_bias ? p.bias.data() : nullptr;
    const std::vector<double> ref = reference(effective_W, p.x.data(), bias, p.rows, p.cols);
    std::vector<float> scalar_y;
    for (Isa isa : isas()) {
      std::vector<float> first;
      for (ThreadPool* pool : {&one, &two}) {
        Offset<float> y(static_cast<std::size_t>(p.rows), y_offset);
        std::fill(y.data(), y.data() + p.rows, std::nanf(""));
        run(isa, bias, *pool, y.data());
        const std::string what = label(isa, p.rows, p.cols, with_bias, pool->size());
        EXPECT_LE(normwise_error(y.data(), ref), 1e-5) << what;
        std::vector<float> got(y.data(), y.data() + p.rows);
        if (first.empty()) {
          first = got;
        } else {
          EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float)))
              << what << ": not the same bits as on 1 thread";
        }
      }
      if (isa == Isa::scalar) {
        scalar_y = first;
      } else {
        std::vector<double> as_double(scalar_y.begin(), scalar_y.end());
        EXPECT_LE(normwise_error(first.data(), as_double), 1e-5)
            << label(isa, p.rows, p.cols, with_bias, 1) << " against scalar";
      }
    }
  }
}

TEST(Gemv, IsaDetectionAndNames) {
  EXPECT_TRUE(isa_supported(Isa::scalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_EQ(isa_name(Isa::scalar), "scalar");
  EXPECT_EQ(isa_name(Isa::avx2), "avx2");
  EXPECT_EQ(isa_name(Isa::avx512), "avx512");
  EXPECT_EQ(isa_name(Isa::neon), "neon");
  if (isa_supported(Isa::avx512)) {
    EXPECT_EQ(best_isa(), Isa::avx512);
    EXPECT_TRUE(isa_supported(Isa::avx2));
  }
  // Each SIMD path exists only in a build for its architecture; arm64 always has NEON.
#if defined(__aarch64__)
  EXPECT_TRUE(isa_supported(Isa::neon));
  EXPECT_EQ(best_isa(), Isa::neon);
  EXPECT_FALSE(isa_supported(Isa::avx2));
  EXPECT_FALSE(isa_supported(Isa::avx512));
#else
  EXPECT_FALSE(isa_supported(Isa::neon));
#endif
}

// On arm64 the q8 product has two variants, SDOT where the core has it and plain NEON on
// every core; elsewhere neither exists.
TEST(Gemv, Q8NeonVariantsFollowTheCpu) {
  bool dotprod = false, neon = false;
  for (const detail::Q8Kernel& k : detail::q8_kernels()) {
    if (k.name == "neon-dotprod") {
      dotprod = true;
      EXPECT_EQ(k.supported(), cpu_features().dotprod);
    }
    if (k.name == "neon") {
      neon = true;
      EXPECT_TRUE(k.supported());
    }
    if (k.isa == Isa::neon) {
      EXPECT_TRUE(k.name == "neon" || k.name == "neon-dotprod") << k.name;
    }
  }
#if defined(__aarch64__)
  EXPECT_TRUE(dotprod);
  EXPECT_TRUE(neon);
#else
  EXPECT_FALSE(dotprod);
  EXPECT_FALSE(neon);
#endif
}

TEST(Gemv, F32MatchesReferenceOnEveryTail) {
  std::uint64_t seed = 1;
  for (std::int64_t rows : kSizes)
    for (std::int64_t cols : kSizes) {
      // Offsets of 0..3 floats put W, x, bias and y at every alignment the kernels handle.
      const std::size_t offset = static_cast<std::size_t>(seed % 4);
      Problem p(rows, cols, seed++, offset);
      Offset<float> W(p.W.size(), offset == 0 ? 3 : offset - 1);
      std::copy(p.W.begin(), p.W.end(), W.data());
      check_all(p, p.W, offset, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
        gemv_f32(W.data(), p.x.data(), bias, y, rows, cols, pool, isa);
      });
    }
}

TEST(Gemv, F32LargeMatrixOnManyThreads) {
  Problem p(2304, 768, 77, 0);
  check_all(p, p.W, 0, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
    gemv_f32(p.W.data(), p.x.data(), bias, y, p.rows, p.cols, pool, isa);
  });
  // W off its alignment, and y 5 floats past a cache line, which moves every chunk boundary
  // of the split.
  Offset<float> W(p.W.size(), 1);
  std::copy(p.W.begin(), p.W.end(), W.data());
  check_all(p, p.W, 5, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
    gemv_f32(W.data(), p.x.data(), bias, y, p.rows, p.cols, pool, isa);
  });
}

// gemv_f32_columns gives each vector exactly gemv_f32's bits, however many vectors come with it
// and however the rows are blocked (a block is 256 KiB of W: 4 rows of 20000 columns reach the
// smallest block, 2304 x 768 several blocks per thread), on every tail of the columns.
TEST(Gemv, F32ColumnsEqualOneGemvPerVector) {
  ThreadPool one(1), two(2);
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{2304, 768}, {17, 20000}, {5, 3}, {6, 16 * 21 + 5}})
    for (Isa isa : isas())
      for (ThreadPool* pool : {&one, &two}) {
        const std::int64_t n = 7;
        Problem p(rows, cols, 5, 0);
        // W one float past a cache line: the kernels peel a head off every row to align it.
        Offset<float> W(p.W.size(), 1);
        std::copy(p.W.begin(), p.W.end(), W.data());
        std::vector<float> X(static_cast<std::size_t>(n * cols));
        Rng rng(9);
        rng.fill_normal(X, 0.0f, 1.0f);
        std::vector<float> Y(static_cast<std::size_t>(n * rows), std::nanf(""));
        gemv_f32_columns(W.data(), X.data(), Y.data(), rows, cols, n, *pool, isa);
        for (std::int64_t j = 0; j < n; ++j) {
          std::vector<float> y(static_cast<std::size_t>(rows));
          gemv_f32(W.data(), X.data() + j * cols, nullptr, y.data(), rows, cols, one, isa);
          EXPECT_EQ(0, std::memcmp(y.data(), Y.data() + j * rows, y.size() * sizeof(float)))
              << label(isa, rows, cols, false, pool->size()) << " vector " << j;
        }
      }
}

// Weights rounded to half, some of them subnormal halves, as the kernel's input; the reference
// uses the same halves converted to float (exact).
std::vector<float> to_halves(std::vector<float>& W, Offset<std::uint16_t>& H, std::uint64_t seed) {
  Rng rng(seed);
  for (float& w : W)
    if (rng.below(16) == 0) w *= 1e-6f;  // below 2^-14: a subnormal half
  for (std::size_t i = 0; i < W.size(); ++i) H[i] = float_to_half(W[i]);
  std::vector<float> back(W.size());
  for (std::size_t i = 0; i < W.size(); ++i) back[i] = half_to_float(H[i]);
  return back;
}

TEST(Gemv, F16MatchesReferenceOnEveryTail) {
  std::uint64_t seed = 1000;
  for (std::int64_t rows : kSizes)
    for (std::int64_t cols : kSizes) {
      const std::size_t offset = static_cast<std::size_t>(seed % 4);
      Problem p(rows, cols, seed++, offset);
      Offset<std::uint16_t> H(p.W.size(), (offset * 3) % 8);  // 0, 3, 6, 1 halves
      const std::vector<float> halves = to_halves(p.W, H, seed);
      check_all(p, halves, offset, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
        gemv_f16(H.data(), p.x.data(), bias, y, rows, cols, pool, isa);
      });
    }
}

TEST(Gemv, F16LargeMatrixOnManyThreads) {
  Problem p(2304, 768, 78, 0);
  for (std::size_t offset : {0, 1}) {
    Offset<std::uint16_t> H(p.W.size(), offset);
    const std::vector<float> halves = to_halves(p.W, H, 79);
    check_all(p, halves, 0, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
      gemv_f16(H.data(), p.x.data(), bias, y, p.rows, p.cols, pool, isa);
    });
  }
}

// Every column tail of the kernels (0 to 40 columns: the 16-, 8- and 4-wide steps and the last
// 1-3 columns of the NEON kernels, the masked 8- and 16-wide ones of the x86 kernels), with row
// counts that leave 0 to 3 rows after the groups of four, and W, x and y at every float
// alignment. (At least four rows: the error is normwise over the rows, and one short row's sum
// may cancel to far below its terms.)
TEST(Gemv, F32AndF16EveryShortTail) {
  std::uint64_t seed = 3000;
  for (std::int64_t rows : {4, 5, 6, 7, 9, 10, 11})
    for (std::int64_t cols = 0; cols <= 40; ++cols) {
      const std::size_t offset = static_cast<std::size_t>(seed % 4);
      Problem p(rows, cols, seed++, offset);
      Offset<float> W(p.W.size(), 3 - offset);
      std::copy(p.W.begin(), p.W.end(), W.data());
      check_all(p, p.W, (offset + 1) % 4, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
        gemv_f32(W.data(), p.x.data(), bias, y, rows, cols, pool, isa);
      });
      Offset<std::uint16_t> H(p.W.size(), offset * 3);  // 0, 3, 6, 9 halves past a line
      const std::vector<float> halves = to_halves(p.W, H, seed);
      check_all(p, halves, offset, [&](Isa isa, const float* bias, ThreadPool& pool, float* y) {
        gemv_f16(H.data(), p.x.data(), bias, y, rows, cols, pool, isa);
      });
    }
}

// A row's arithmetic depends on cols and W alone, not on where the row falls: in a group of
// four rows or after the groups, at the start or the end of a thread's range. With every row
// of W the same, every y is the same bits, for each format and ISA, on 1 and 2 threads. (Two
// orders of the same sums often round alike, so each shape is tried with several W and x.)
TEST(Gemv, IdenticalRowsGiveIdenticalBits) {
  ThreadPool one(1), two(2);
  const auto check = [&](std::int64_t rows, std::int64_t cols, bool q8, std::uint64_t seed) {
    Problem p(1, cols, seed, 1);
    std::vector<float> W(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) std::copy(p.W.begin(), p.W.end(), W.begin() + r * cols);
    Offset<std::uint16_t> H(W.size(), 1);
    for (std::size_t i = 0; i < W.size(); ++i) H[i] = float_to_half(W[i]);
    std::vector<std::int8_t> q(W.size());
    std::vector<float> scales(W.size() / 32);
    if (q8) quantize_q8(W.data(), rows, cols, 32, q.data(), scales.data());
    for (Isa isa : isas())
      for (ThreadPool* pool : {&one, &two})
        for (int kind = 0; kind < (q8 ? 3 : 2); ++kind) {
          std::vector<float> y(static_cast<std::size_t>(rows), std::nanf(""));
          if (kind == 0) gemv_f32(W.data(), p.x.data(), nullptr, y.data(), rows, cols, *pool, isa);
          if (kind == 1) gemv_f16(H.data(), p.x.data(), nullptr, y.data(), rows, cols, *pool, isa);
          if (kind == 2) gemv_q8({q.data(), scales.data(), rows, cols, 32}, p.x.data(), nullptr, y.data(), *pool, isa);
          const std::string what = label(isa, rows, cols, false, pool->size()) + " kind " + std::to_string(kind);
          ASSERT_TRUE(std::isfinite(y[0])) << what;
          for (std::int64_t r = 1; r < rows; ++r)
            ASSERT_EQ(0, std::memcmp(&y[0], &y[static_cast<std::size_t>(r)], sizeof(float))) << what << " row " << r;
        }
  };
  for (const auto& [rows, whole] : {std::pair<std::int64_t, std::int64_t>{11, 64 + 32}, {7, 768 + 32}, {1001, 96 * 4}})
    for (std::uint64_t seed = 0; seed < (rows > 100 ? 2 : 8); ++seed) {
      // q8 takes whole blocks; f32 and f16 also 15 columns more, which reach every step of
      // their column tails.
      check(rows, whole, true, static_cast<std::uint64_t>(rows) * 100 + seed);
      check(rows, whole + 15, false, static_cast<std::uint64_t>(rows) * 100 + seed);
    }
}

// The q8 weights and, as floats, what they dequantise to (scale * q, rounded to float, written
// here rather than taken from dequantize_q8).
struct Q8Problem {
  Offset<std::int8_t> q;
  Offset<float> scales;
  std::vector<float> dequantised;
  Q8Problem(const std::vector<float>& W, std::int64_t rows, std::int64_t cols, int block,
            std::size_t offset)
      : q(W.size(), offset), scales(static_cast<std::size_t>(rows * (cols / block)), offset),
        dequantised(W.size()) {
    quantize_q8(W.data(), rows, cols, block, q.data(), scales.data());
    for (std::size_t i = 0; i < W.size(); ++i)
      dequantised[i] = scales[i / static_cast<std::size_t>(block)] * static_cast<float>(q[i]);
  }
  Q8Weights weights(std::int64_t rows, std::int64_t cols, int block) {
    return {q.data(), scales.data(), rows, cols, block};
  }
};

// The activation as the q8 kernels quantise it (q8_activation.h), recomputed here: per block,
// q = round(x * (127 / absmax)) and s = absmax / 127.
std::vector<float> quantised_x(const float* x, std::int64_t cols, int block) {
  std::vector<float> out(static_cast<std::size_t>(cols));
  for (std::int64_t b = 0; b < cols / block; ++b) {
    float absmax = 0;
    for (int i = 0; i < block; ++i) absmax = std::max(absmax, std::fabs(x[b * block + i]));
    for (int i = 0; i < block; ++i) {
      const float q = absmax > 0 ? std::nearbyint(x[b * block + i] * (127.0f / absmax)) : 0.0f;
      out[static_cast<std::size_t>(b * block + i)] = q * (absmax / 127.0f);
    }
  }
  return out;
}

// Every q8 variant this CPU runs gives the scalar path's bits, on 1 and 2 threads; the scalar
// path equals an fp64 product of the dequantised weights and the quantised activation within
// 1e-5 normwise, and differs from the product with the unquantised activation by no more than
// the quantisation bound: sum over the row of |w| * s_b / 2 (s_b the activation block's scale).
void check_q8(Q8Problem& qp, const Problem& p, int block, std::size_t y_offset) {
  ThreadPool one(1), two(2);
  Q8Weights W = qp.weights(p.rows, p.cols, block);
  const std::vector<float> xq = quantised_x(p.x.data(), p.cols, block);
  for (bool with_bias : {false, true}) {
    const float* bias = with_bias ? p.bias.data() : nullptr;
    const std::string what = label(Isa::scalar, p.rows, p.cols, with_bias, 1) + " block " + std::to_string(block);
    Offset<float> want(static_cast<std::size_t>(p.rows), y_offset);
    detail::gemv_q8_with(detail::q8_kernels().back(), W, p.x.data(), bias, want.data(), one, Activation::none);
    ASSERT_EQ(detail::q8_kernels().back().name, "scalar");
    EXPECT_LE(normwise_error(want.data(), reference(qp.dequantised, xq.data(), bias, p.rows, p.cols)), 1e-5) << what;
    const std::vector<double> exact = reference(qp.dequantised, p.x.data(), bias, p.rows, p.cols);
    for (std::int64_t r = 0; r < p.rows; ++r) {
      double bound = 0;
      for (std::int64_t c = 0; c < p.cols; ++c) {
        float absmax = 0;
        for (std::int64_t i = c / block * block; i < (c / block + 1) * block; ++i) absmax = std::max(absmax, std::fabs(p.x.data()[i]));
        bound += std::fabs(qp.dequantised[static_cast<std::size_t>(r * p.cols + c)]) * absmax / 127.0 / 2;
      }
      ASSERT_LE(std::fabs(want[static_cast<std::size_t>(r)] - exact[static_cast<std::size_t>(r)]), bound * 1.001 + 1e-5 * std::fabs(exact[static_cast<std::size_t>(r)]))
          << what << " row " << r;
    }
    for (const detail::Q8Kernel& k : detail::q8_kernels()) {
      if (!k.supported()) continue;
      for (ThreadPool* pool : {&one, &two}) {
        Offset<float> y(static_cast<std::size_t>(p.rows), y_offset);
        std::fill(y.data(), y.data() + p.rows, std::nanf(""));
        detail::gemv_q8_with(k, W, p.x.data(), bias, y.data(), *pool, Activation::none);
        ASSERT_EQ(0, std::memcmp(want.data(), y.data(), static_cast<std::size_t>(p.rows) * sizeof(float)))
            << what << ": " << k.name << " on " << pool->size() << " threads differs from scalar";
      }
    }
    // The public entry point picks one of the variants: the same bits again.
    for (Isa isa : isas()) {
      Offset<float> y(static_cast<std::size_t>(p.rows), y_offset);
      gemv_q8(W, p.x.data(), bias, y.data(), two, isa);
      ASSERT_EQ(0, std::memcmp(want.data(), y.data(), static_cast<std::size_t>(p.rows) * sizeof(float))) << what << " " << isa_name(isa);
    }
  }
}

TEST(Gemv, Q8VariantsEqualScalarOnEveryTail) {
  std::uint64_t seed = 2000;
  for (int block : {32, 64})
    for (std::int64_t rows : kSizes)
      for (std::int64_t cols : {block, 2 * block, 3 * block, 768, 768 + block}) {
        const std::size_t offset = static_cast<std::size_t>(seed % 4);
        Problem p(rows, cols, seed++, offset);
        Q8Problem qp(p.W, rows, cols, block, offset * 5);
        check_q8(qp, p, block, offset);
      }
}

TEST(Gemv, Q8LargeMatrixOnManyThreads) {
  for (int block : {32, 64}) {
    Problem p(2304, 768, 80 + static_cast<std::uint64_t>(block), 0);
    Q8Problem qp(p.W, p.rows, p.cols, block, 0);
    check_q8(qp, p, block, 3);
  }
}

TEST(Gemv, Q8VariantsCoverEveryIsa) {
  // Each Isa has at least one variant this CPU runs when the Isa itself runs here.
  for (Isa isa : isas()) {
    bool found = false;
    for (const detail::Q8Kernel& k : detail::q8_kernels()) found = found || (k.isa == isa && k.supported());
    EXPECT_TRUE(found) << isa_name(isa);
  }
}

TEST(Gemv, EmptyShapes) {
  ThreadPool pool(2);
  const float W[1] = {1.0f}, x[1] = {2.0f}, bias[3] = {1.0f, 2.0f, 3.0f};
  const std::uint16_t H[1] = {0x3c00};
  for (Isa isa : isas()) {
    float y[3] = {9, 9, 9};
    gemv_f32(W, x, bias, y, 3, 0, pool, isa);  // no columns: the bias
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[2], 3.0f);
    gemv_f16(H, x, nullptr, y, 3, 0, pool, isa);  // no columns, no bias: zeros
    EXPECT_EQ(y[1], 0.0f);
    y[0] = 9;
    gemv_f32(W, x, nullptr, y, 0, 1, pool, isa);  // no rows: nothing written
    EXPECT_EQ(y[0], 9.0f);
    const Q8Weights q{nullptr, nullptr, 2, 0, 32};
    gemv_q8(q, x, bias, y, pool, isa);
    EXPECT_EQ(y[1], 2.0f);
  }
}

// The fused GELU is gelu_tanh_rows of the unfused result, bit for bit, on every ISA and thread
// count; and gelu_tanh itself matches the formula 0.5 x (1 + tanh(u)) evaluated in fp64.
TEST(Gemv, FusedGeluEqualsGeluOfTheProduct) {
  for (double v : {-6.0, -2.5, -0.3, 0.0, 0.7, 3.0}) {
    const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    EXPECT_NEAR(gelu_tanh(static_cast<float>(v)), 0.5 * v * (1.0 + std::tanh(u)), 1e-6) << v;
  }
  ThreadPool one(1), two(2);
  for (std::int64_t rows : {std::int64_t{5}, std::int64_t{3072 + 5}}) {
    Problem p(rows, 64, 91, 0);
    std::vector<std::int8_t> q(p.W.size());
    std::vector<float> scales(p.W.size() / 32);
    quantize_q8(p.W.data(), p.rows, p.cols, 32, q.data(), scales.data());
    std::vector<std::uint16_t> h(p.W.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = float_to_half(p.W[i]);
    for (Isa isa : isas())
      for (ThreadPool* pool : {&one, &two})
        for (int kind = 0; kind < 3; ++kind) {
          std::vector<float> plain(static_cast<std::size_t>(rows)), fused(plain.size());
          const auto run = [&](float* y, Activation act) {
            if (kind == 0) gemv_f32(p.W.data(), p.x.data(), p.bias.data(), y, rows, p.cols, *pool, isa, act);
            if (kind == 1) gemv_f16(h.data(), p.x.data(), p.bias.data(), y, rows, p.cols, *pool, isa, act);
            if (kind == 2) gemv_q8({q.data(), scales.data(), rows, p.cols, 32}, p.x.data(), p.bias.data(), y, *pool, isa, act);
          };
          run(plain.data(), Activation::none);
          run(fused.data(), Activation::gelu);
          gelu_tanh_rows(plain.data(), static_cast<std::int64_t>(plain.size()));
          for (std::size_t i = 0; i < plain.size(); ++i)
            ASSERT_EQ(fused[i], plain[i]) << label(isa, rows, p.cols, true, pool->size()) << " kind " << kind << " row " << i;
        }
  }
}

TEST(Gemv, RejectsBadArguments) {
  ThreadPool pool(1);
  std::vector<std::int8_t> q(96);
  std::vector<float> s(3), x(96), y(2);
  EXPECT_THROW(gemv_q8({q.data(), s.data(), 1, 96, 48}, x.data(), nullptr, y.data(), pool),
               Error);
  EXPECT_THROW(gemv_q8({q.data(), s.data(), 1, 80, 32}, x.data(), nullptr, y.data(), pool),
               Error);
  EXPECT_THROW(gemv_f32(x.data(), x.data(), nullptr, y.data(), -1, 4, pool), Error);
  EXPECT_THROW(gemv_f16(nullptr, x.data(), nullptr, y.data(), 1, -4, pool), Error);
  const std::vector<std::uint16_t> h(96);
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) {
      EXPECT_THROW(gemv_f32(x.data(), x.data(), nullptr, y.data(), 1, 4, pool, isa), Error);
      EXPECT_THROW(gemv_f16(h.data(), x.data(), nullptr, y.data(), 1, 4, pool, isa), Error);
      EXPECT_THROW(gemv_f32_columns(x.data(), x.data(), y.data(), 1, 4, 2, pool, isa), Error);
      EXPECT_THROW(gemv_q8({q.data(), s.data(), 1, 32, 32}, x.data(), nullptr, y.data(), pool, isa), Error);
    }
  }
  // A variant this CPU cannot run (an arm64 core without SDOT, an x86 one without VNNI) throws
  // rather than running its instructions.
  for (const detail::Q8Kernel& k : detail::q8_kernels()) {
    if (!k.supported()) {
      EXPECT_THROW(detail::gemv_q8_with(k, {q.data(), s.data(), 1, 32, 32}, x.data(), nullptr, y.data(), pool,
                                        Activation::none),
                   Error)
          << k.name;
    }
  }
}

}  // namespace
}  // namespace orion::exec::cpu
