// matmul against a naive fp64 product: transposes, broadcast batch dimensions, odd sizes, and
// sizes that cross every blocking boundary of the kernel.
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kMatmulRegistered = mark_tested({Op::matmul});

// A product in logical terms: batch shapes of x and y, and m x k times k x n.
struct MatmulCase {
  Shape xbatch, ybatch;
  std::int64_t m, k, n;
};

const MatmulCase kMatmulCases[] = {
    {{}, {}, 1, 1, 1},
    {{}, {}, 3, 5, 7},
    {{}, {}, 4, 1, 6},
    {{}, {}, 1, 8, 1},
    {{}, {}, 2, 9, 3},
    {{}, {}, 17, 33, 9},
    {{}, {}, 5, 600, 9},           // several slices of the inner dimension
    {{}, {}, 1, 300, 70},          // one row
    {{}, {}, 3, 300, 1100},        // few rows, several column blocks
    {{}, {}, 130, 70, 260},        // several row and column tiles
    {{}, {}, 129, 257, 263},       // ragged in every dimension
    {{2}, {}, 3, 4, 5},            // batched x, shared y
    {{2}, {2}, 3, 4, 5},
    {{}, {2}, 3, 4, 5},            // shared x, batched y
    {{2, 1}, {1, 3}, 4, 6, 5},     // batch dims broadcast both ways
    {{3, 1, 2}, {4, 1}, 2, 7, 3},
    {{1}, {3}, 5, 4, 2},
    {{4}, {}, 1, 5, 3},            // one row per batch
    {{2, 3}, {2, 3}, 33, 20, 17},
    {{2}, {2}, 64, 128, 160},      // per batch above the sgemm threshold
    {{3}, {}, 100, 120, 90},       // batched x on one weight: one tall sgemm
};

Shape stored_shape(const Shape& batch, std::int64_t rows, std::int64_t cols, bool transposed) {
  Shape s = batch;
  s.push_back(transposed ? cols : rows);
  s.push_back(transposed ? rows : cols);
  return s;
}

TEST(Matmul, MatchesNaiveProductWithTransposesAndBroadcastBatches) {
  std::uint64_t seed = 1000;
  for (const MatmulCase& c : kMatmulCases) {
    for (const bool tx : {false, true}) {
      for (const bool ty : {false, true}) {
        Rng rng(seed++);
        const Shape xs = stored_shape(c.xbatch, c.m, c.k, tx);
        const Shape ys = stored_shape(c.ybatch, c.k, c.n, ty);
        const Input x = float_input(rng, "x", xs, -1, 1);
        const Input y = float_input(rng, "y", ys, -1, 1);
        const Shape ob = broadcast(c.xbatch, c.ybatch);
        Shape out_shape = ob;
        out_shape.push_back(c.m);
        out_shape.push_back(c.n);
        const std::string what = cat("matmul ", str(xs), tx ? "^T" : "", " x ", str(ys), ty ? "^T" : "");
        for (Numerics m : kModes) {
          const std::vector<double> xv = x.stored(m), yv = y.stored(m);
          const std::int64_t batches = shape_numel(ob);
          std::vector<double> ref, scale;
          for (std::int64_t bi = 0; bi < batches; ++bi) {
            const auto bidx = unravel(bi, ob);
            const std::int64_t xb = broadcast_source(bidx, c.xbatch) * c.m * c.k;
            const std::int64_t yb = broadcast_source(bidx, c.ybatch) * c.k * c.n;
            for (std::int64_t i = 0; i < c.m; ++i)
              for (std::int64_t j = 0; j < c.n; ++j) {
                double sum = 0, mag = 0;
                for (std::int64_t k = 0; k < c.k; ++k) {
                  const double a = xv[static_cast<std::size_t>(xb + (tx ? k * c.m + i : i * c.k + k))];
                  const double b = yv[static_cast<std::size_t>(yb + (ty ? j * c.k + k : k * c.n + j))];
                  sum += a * b;
                  mag += std::fabs(a * b);
                }
                ref.push_back(sum);
                scale.push_back(mag);
              }
          }
          const Tensor got = run_op({x, y}, [&](ir::Builder& b, const auto& v) { return b.matmul(v[0], v[1], tx, ty); }, m);
          expect_close(got, out_shape, ref, m, what, {.growth = static_cast<double>(c.k) + 1, .scale = &scale});
        }
      }
    }
  }
}

// The blocking does not depend on the pool, so any number of threads gives the same bits.
TEST(Matmul, ResultDoesNotDependOnThreadCount) {
  Rng rng(7);
  const Input x = float_input(rng, "x", {2, 150, 300}, -1, 1);
  const Input y = float_input(rng, "y", {300, 270}, -1, 1);
  auto mm = [](ir::Builder& b, const std::vector<ir::Value>& v) { return b.matmul(v[0], v[1]); };
  const std::vector<float> one = run_op({x, y}, mm, Numerics::f32, nullptr, 1).to_floats();
  const std::vector<float> four = run_op({x, y}, mm, Numerics::f32, nullptr, 4).to_floats();
  ASSERT_EQ(one.size(), four.size());
  for (std::size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], four[i]) << "element " << i;
}

// An inner dimension of zero gives zeros, also when the output's memory held other values.
TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  ir::Builder b;
  const ir::Value x = b.input("x", DType::f32, {3, 4});
  const ir::Value big = b.exp(b.matmul(x, b.input("w", DType::f32, {4, 5})));  // a planned slot
  const ir::Value e = b.matmul(b.input("p", DType::f32, {3, 0}), b.input("q", DType::f32, {0, 5}));
  b.output(b.add(b.mul(big, b.scalar(0.0f)), e));
  exec::CpuExecutor ex(b.finish());
  std::vector<float> ones(20, 1.0f);
  const auto out = ex.run({{"x", Tensor::from_floats({3, 4}, std::vector<float>(12, 1.0f))},
                           {"w", Tensor::from_floats({4, 5}, ones)},
                           {"p", Tensor(DType::f32, {3, 0})},
                           {"q", Tensor(DType::f32, {0, 5})}});
  for (float v : out.at(0).to_floats()) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace orion::test
