// reduce_sum, reduce_mean and reduce_max over every set of axes, with and without keep_dims.
#include <cmath>

#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kReduceRegistered = mark_tested({Op::reduce_sum, Op::reduce_mean, Op::reduce_max});

const Shape kShapes[] = {{1}, {7}, {3, 5}, {2, 1, 4}, {4, 3, 6}, {2, 3, 4, 5}, {3, 1, 1, 2}, {200, 300}, {3, 70, 200}};

TEST(Reduce, EveryOpOverEverySetOfAxes) {
  std::uint64_t seed = 5000;
  for (const Shape& s : kShapes) {
    const int rank = static_cast<int>(s.size());
    for (unsigned mask = 1; mask < (1u << rank); ++mask) {
      for (const Op op : {Op::reduce_sum, Op::reduce_mean, Op::reduce_max}) {
        for (const bool keep : {false, true}) {
          Rng rng(seed++);
          const Input x = float_input(rng, "x", s, -4, 4);
          // The axes in random order, some spelled negative.
          std::vector<std::int64_t> axes;
          for (int d = rank; d-- > 0;)
            if (mask & (1u << d)) axes.push_back(rng.uniform() < 0.5f ? d : d - rank);
          Shape out_shape;
          std::int64_t count = 1;
          for (int d = 0; d < rank; ++d) {
            const bool reduced = (mask & (1u << d)) != 0;
            if (reduced) count *= s[static_cast<std::size_t>(d)];
            if (!reduced) out_shape.push_back(s[static_cast<std::size_t>(d)]);
            else if (keep) out_shape.push_back(1);
          }
          const std::string what = cat(ir::op_info(op).name, " ", str(s), " axes ", str(Shape(axes.begin(), axes.end())),
                                       keep ? " keep_dims" : "");
          for (Numerics m : kModes) {
            const std::vector<double> xv = x.stored(m);
            const auto n_out = static_cast<std::size_t>(shape_numel(out_shape));
            std::vector<double> acc(n_out, op == Op::reduce_max ? -INFINITY : 0.0), mag(n_out, 0.0);
            for (std::size_t i = 0; i < xv.size(); ++i) {
              const auto idx = unravel(static_cast<std::int64_t>(i), s);
              std::vector<std::int64_t> oidx;
              for (int d = 0; d < rank; ++d) {
                const bool reduced = (mask & (1u << d)) != 0;
                if (!reduced) oidx.push_back(idx[static_cast<std::size_t>(d)]);
                else if (keep) oidx.push_back(0);
              }
              const auto o = static_cast<std::size_t>(ravel(oidx, out_shape));
              if (op == Op::reduce_max) acc[o] = std::max(acc[o], xv[i]);
              else acc[o] += xv[i];
              mag[o] += std::fabs(xv[i]);
            }
            if (op == Op::reduce_mean)
              for (std::size_t o = 0; o < n_out; ++o) {
                acc[o] /= static_cast<double>(count);
                mag[o] /= static_cast<double>(count);
              }
            const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.op(op, {v[0]}, {{"axes", axes}, {"keep_dims", keep}}); }, m);
            expect_close(got, out_shape, acc, m, what, {.growth = 2, .scale = &mag});
          }
        }
      }
    }
  }
}

// Small terms after a large one: a float accumulator would drop every one of them
// (2^24 + 1 rounds back to 2^24), so the sums must be accumulated in higher precision. Both the
// contiguous case (last axis) and the strided one (first axis).
TEST(Reduce, LongSumsKeepFp32Accuracy) {
  const std::int64_t n = 4001;
  Input rows{"x", {2, n}, {}};
  Input cols{"x", {n, 2}, {}};
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t i = 0; i < n; ++i) rows.values.push_back(i == 0 ? 16777216.0f : 1.0f);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < 2; ++c) cols.values.push_back(i == 0 ? 16777216.0f : 1.0f);
  const double want = 16777216.0 + 4000.0;  // even, so a float holds it exactly
  const Tensor a = run_op({rows}, [](ir::Builder& b, const auto& v) { return b.reduce_sum(v[0], {1}); }, Numerics::f32);
  EXPECT_EQ(a.to_floats(), (std::vector<float>{static_cast<float>(want), static_cast<float>(want)}));
  const Tensor c = run_op({cols}, [](ir::Builder& b, const auto& v) { return b.reduce_sum(v[0], {0}); }, Numerics::f32);
  EXPECT_EQ(c.to_floats(), (std::vector<float>{static_cast<float>(want), static_cast<float>(want)}));
  const Tensor m = run_op({rows}, [](ir::Builder& b, const auto& v) { return b.reduce_mean(v[0], {1}); }, Numerics::f32);
  expect_close(m, {2}, {want / n, want / n}, Numerics::f32, "long mean");
}

TEST(Reduce, MaxPropagatesNan) {
  const Input x{"x", {2, 3}, {1.0f, std::nanf(""), 3.0f, -1.0f, -2.0f, -3.0f}};
  const Tensor got = run_op({x}, [](ir::Builder& b, const auto& v) { return b.reduce_max(v[0], {1}); }, Numerics::f32);
  const std::vector<float> g = got.to_floats();
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], -1.0f);
}

}  // namespace
}  // namespace orion::test
