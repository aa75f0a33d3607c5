// softmax along every axis, layer_norm and rms_norm over the last axis, against fp64 references.
#include <cmath>

#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kNormalizeRegistered = mark_tested({Op::softmax, Op::layer_norm, Op::rms_norm});

const Shape kSoftmaxShapes[] = {{1}, {7}, {3, 5}, {2, 1, 4}, {4, 3, 6}, {2, 3, 4, 5}, {1, 1}, {3, 130, 70}, {200, 300}};

TEST(Normalize, SoftmaxAlongEveryAxis) {
  std::uint64_t seed = 2000;
  for (const Shape& s : kSoftmaxShapes) {
    const int rank = static_cast<int>(s.size());
    for (int axis = -rank; axis < rank; ++axis) {
      Rng rng(seed++);
      const Input x = float_input(rng, "x", s, -6, 6);
      const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      const std::string what = cat("softmax ", str(s), " axis ", axis);
      for (Numerics m : kModes) {
        const std::vector<double> xv = x.stored(m);
        std::vector<double> ref(xv.size()), growth_scale(xv.size());
        // Every slice along the axis (the elements whose index differs only in `ax`), keyed by
        // its element with index 0 on the axis; its maximum and sum are computed once.
        std::vector<double> slice_max(xv.size(), NAN), slice_sum(xv.size(), NAN);
        for (std::size_t i = 0; i < xv.size(); ++i) {
          auto idx = unravel(static_cast<std::int64_t>(i), s);
          idx[ax] = 0;
          const auto key = static_cast<std::size_t>(ravel(idx, s));
          if (std::isnan(slice_max[key])) {
            double mx = -INFINITY;
            for (idx[ax] = 0; idx[ax] < s[ax]; ++idx[ax]) mx = std::max(mx, xv[static_cast<std::size_t>(ravel(idx, s))]);
            double sum = 0;
            for (idx[ax] = 0; idx[ax] < s[ax]; ++idx[ax]) sum += std::exp(xv[static_cast<std::size_t>(ravel(idx, s))] - mx);
            slice_max[key] = mx;
            slice_sum[key] = sum;
          }
          const double mx = slice_max[key];
          ref[i] = std::exp(xv[i] - mx) / slice_sum[key];
          // exp(x - max) in fp32 has a relative error of about |x - max| ulps.
          growth_scale[i] = ref[i] * (4 + std::fabs(xv[i] - mx));
        }
        const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.softmax(v[0], axis); }, m);
        expect_close(got, s, ref, m, what, {.growth = 1, .scale = &growth_scale});
      }
    }
  }
}

// Large inputs: without subtracting the maximum exp would overflow.
TEST(Normalize, SoftmaxIsStableForLargeInputs) {
  const Input x{"x", {2, 3}, {1000.0f, 1001.0f, 1002.0f, -1000.0f, -1000.0f, -1000.0f}};
  const Tensor got = run_op({x}, [](ir::Builder& b, const auto& v) { return b.softmax(v[0]); }, Numerics::f32);
  const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
  const double d = 1 + e1 + e2;
  expect_close(got, {2, 3}, {e2 / d, e1 / d, 1 / d, 1.0 / 3, 1.0 / 3, 1.0 / 3}, Numerics::f32, "softmax large");
}

const Shape kNormShapes[] = {{1}, {5}, {3, 7}, {2, 3, 16}, {1, 1, 1}, {4, 1, 33}, {600, 128}, {2, 2, 1}};

TEST(Normalize, LayerNormOverLastAxis) {
  std::uint64_t seed = 3000;
  for (const double eps : {1e-5, 1e-2}) {
    for (const Shape& s : kNormShapes) {
      Rng rng(seed++);
      const std::int64_t c = s.back();
      Input x = float_input(rng, "x", s, -3, 3);
      for (float& v : x.values) v += 2.0f;  // a non-zero mean
      if (x.values.size() >= 2 * static_cast<std::size_t>(c))  // one constant row: variance 0
        std::fill(x.values.begin() + c, x.values.begin() + 2 * c, 0.75f);
      const Input gamma = float_input(rng, "gamma", {c}, -1.5f, 1.5f);
      const Input beta = float_input(rng, "beta", {c}, -1, 1);
      const std::string what = cat("layer_norm ", str(s), " eps ", eps);
      for (Numerics m : kModes) {
        const std::vector<double> xv = x.stored(m), g = gamma.stored(m), bt = beta.stored(m);
        std::vector<double> ref(xv.size()), scale(xv.size());
        for (std::size_t r = 0; r < xv.size() / static_cast<std::size_t>(c); ++r) {
          const auto cc = static_cast<std::size_t>(c);
          double mean = 0;
          for (std::size_t j = 0; j < cc; ++j) mean += xv[r * cc + j];
          mean /= static_cast<double>(c);
          double var = 0;
          for (std::size_t j = 0; j < cc; ++j) var += (xv[r * cc + j] - mean) * (xv[r * cc + j] - mean);
          var /= static_cast<double>(c);  // biased, as torch
          for (std::size_t j = 0; j < cc; ++j) {
            const double norm = (xv[r * cc + j] - mean) / std::sqrt(var + eps) * g[j];
            ref[r * cc + j] = norm + bt[j];
            scale[r * cc + j] = std::fabs(norm) + std::fabs(bt[j]);
          }
        }
        const Tensor got = run_op({x, gamma, beta},
                                  [&](ir::Builder& b, const auto& v) { return b.layer_norm(v[0], v[1], v[2], eps); }, m);
        expect_close(got, s, ref, m, what, {.growth = 8, .scale = &scale});
      }
    }
  }
}

TEST(Normalize, RmsNormOverLastAxis) {
  std::uint64_t seed = 4000;
  for (const double eps : {1e-6, 1e-1}) {
    for (const Shape& s : kNormShapes) {
      Rng rng(seed++);
      const std::int64_t c = s.back();
      const Input x = float_input(rng, "x", s, -3, 3);
      const Input w = float_input(rng, "w", {c}, -1.5f, 1.5f);
      const std::string what = cat("rms_norm ", str(s), " eps ", eps);
      for (Numerics m : kModes) {
        const std::vector<double> xv = x.stored(m), wv = w.stored(m);
        std::vector<double> ref(xv.size());
        const auto cc = static_cast<std::size_t>(c);
        for (std::size_t r = 0; r < xv.size() / cc; ++r) {
          double ms = 0;
          for (std::size_t j = 0; j < cc; ++j) ms += xv[r * cc + j] * xv[r * cc + j];
          ms /= static_cast<double>(c);
          for (std::size_t j = 0; j < cc; ++j) ref[r * cc + j] = xv[r * cc + j] / std::sqrt(ms + eps) * wv[j];
        }
        const Tensor got =
            run_op({x, w}, [&](ir::Builder& b, const auto& v) { return b.rms_norm(v[0], v[1], eps); }, m);
        expect_close(got, s, ref, m, what, {.f32_rel = 2e-5});
      }
    }
  }
}

}  // namespace
}  // namespace orion::test
