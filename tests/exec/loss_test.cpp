// softmax_cross_entropy and its gradient against fp64 references written here, with logits far
// beyond exp's range (the kernels subtract each row's maximum), and targets out of range.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kLossRegistered = mark_tested({Op::softmax_cross_entropy, Op::softmax_cross_entropy_grad});

struct LossCase {
  std::int64_t rows, v;
  float lo, hi;
};

// A row's log-sum-exp in double.
double lse(const std::vector<double>& x, std::int64_t r, std::int64_t v) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (std::int64_t j = 0; j < v; ++j) m = std::max(m, x[static_cast<std::size_t>(r * v + j)]);
  for (std::int64_t j = 0; j < v; ++j) s += std::exp(x[static_cast<std::size_t>(r * v + j)] - m);
  return m + std::log(s);
}

TEST(Loss, SoftmaxCrossEntropyAndGradientMatchFp64) {
  const LossCase cases[] = {{1, 1, -1, 1}, {3, 5, -4, 4}, {7, 37, -3, 3}, {4, 9, 500, 1000}, {64, 1000, -8, 8}};
  std::uint64_t seed = 40;
  for (const LossCase& c : cases) {
    Rng rng(seed++);
    const Input logits = float_input(rng, "logits", {c.rows, c.v}, c.lo, c.hi);
    Input targets{"targets", {c.rows}, {}, DType::i32};
    for (std::int64_t r = 0; r < c.rows; ++r) targets.values.push_back(static_cast<float>(rng.below(static_cast<std::uint64_t>(c.v))));
    const Input dloss = float_input(rng, "dloss", {c.rows}, -2, 2);
    for (Numerics m : kModes) {
      const std::vector<double> x = logits.stored(m), d = dloss.stored(m);
      std::vector<double> loss, grad;
      for (std::int64_t r = 0; r < c.rows; ++r) {
        const auto t = static_cast<std::int64_t>(targets.values[static_cast<std::size_t>(r)]);
        const double l = lse(x, r, c.v);
        loss.push_back(l - x[static_cast<std::size_t>(r * c.v + t)]);
        for (std::int64_t j = 0; j < c.v; ++j)
          grad.push_back((std::exp(x[static_cast<std::size_t>(r * c.v + j)] - l) - (j == t ? 1.0 : 0.0)) * d[static_cast<std::size_t>(r)]);
      }
      const std::string what = cat("softmax_cross_entropy [", c.rows, ", ", c.v, "] ", mode_str(m));
      const Tensor got = run_op({logits, targets}, [](ir::Builder& b, const auto& v) { return b.softmax_cross_entropy(v[0], v[1]); }, m);
      // The row's logits are summed in the log-sum-exp: their magnitude bounds fp32's error.
      std::vector<double> scale(static_cast<std::size_t>(c.rows), std::max(std::fabs(c.lo), std::fabs(c.hi)));
      expect_close(got, {c.rows}, loss, m, what, {.growth = static_cast<double>(c.v), .scale = &scale});
      const Tensor g = run_op({logits, targets, dloss},
                              [](ir::Builder& b, const auto& v) { return b.softmax_cross_entropy_grad(v[0], v[1], v[2]); }, m);
      expect_close(g, {c.rows, c.v}, grad, m, what + " grad", {.growth = static_cast<double>(c.v), .scale = nullptr, .f32_rel = 1e-4});
    }
  }
}

TEST(Loss, TargetOutOfRangeIsAnErrorNamingIt) {
  for (float bad : {5.0f, -1.0f}) {
    const Input logits{"logits", {2, 5}, std::vector<float>(10, 0.5f)};
    const Input targets{"targets", {2}, {1, bad}, DType::i32};
    try {
      run_op({logits, targets}, [](ir::Builder& b, const auto& v) { return b.softmax_cross_entropy(v[0], v[1]); }, Numerics::f32);
      ADD_FAILURE() << "no error for target " << bad;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("(softmax_cross_entropy): target " + std::to_string(static_cast<int>(bad)) + " (at position 1) is outside [0, 5)"),
                std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace orion::test
