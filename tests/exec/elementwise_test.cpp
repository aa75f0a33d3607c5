// Binary ops (numpy broadcasting), unary ops, clamp and where against fp64 references.
#include <cmath>

#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kElementwiseRegistered = mark_tested({Op::add, Op::sub, Op::mul, Op::div, Op::pow, Op::neg, Op::exp,
                                      Op::log, Op::sqrt, Op::rsqrt, Op::tanh, Op::sigmoid, Op::relu,
                                      Op::gelu, Op::silu, Op::clamp, Op::where});

struct ShapePair {
  Shape x, y;
};

// Equal shapes, broadcasting either way, size-1 and missing axes, scalars, odd sizes, and two
// shapes large enough to be split across the thread pool.
const ShapePair kBinaryShapes[] = {
    {{7}, {7}},          {{3, 5}, {3, 5}},       {{3, 5}, {5}},          {{5}, {3, 5}},
    {{3, 1}, {1, 4}},    {{2, 3, 4}, {3, 1}},    {{1}, {5, 2}},          {{}, {2, 3}},
    {{2, 3}, {}},        {{}, {}},               {{5, 1, 3}, {1, 4, 1}}, {{2, 1, 3, 1}, {4, 1, 5}},
    {{1, 1}, {1}},       {{4, 1, 1}, {4, 1, 1}}, {{301, 257}, {257}},    {{1, 257}, {301, 1}},
    {{301, 257}, {301, 257}},
};

struct BinaryCase {
  Op op;
  double (*f)(double, double);
  float xlo, xhi;
  float ylo, yhi;
  bool y_random_sign = false;
};

const BinaryCase kBinaryCases[] = {
    {Op::add, [](double p, double q) { return p + q; }, -4, 4, -4, 4},
    {Op::sub, [](double p, double q) { return p - q; }, -4, 4, -4, 4},
    {Op::mul, [](double p, double q) { return p * q; }, -4, 4, -4, 4},
    {Op::div, [](double p, double q) { return p / q; }, -4, 4, 0.25f, 4, true},
    {Op::pow, [](double p, double q) { return std::pow(p, q); }, 0.25f, 3, -2.5f, 2.5f},
};

TEST(Elementwise, BinaryOpsBroadcastLikeNumpy) {
  std::uint64_t seed = 100;
  for (const BinaryCase& c : kBinaryCases) {
    for (const ShapePair& sp : kBinaryShapes) {
      Rng rng(seed++);
      Input x = float_input(rng, "x", sp.x, c.xlo, c.xhi);
      Input y = float_input(rng, "y", sp.y, c.ylo, c.yhi);
      if (c.y_random_sign)
        for (float& v : y.values) v = rng.uniform() < 0.5f ? -v : v;
      const Shape out_shape = broadcast(sp.x, sp.y);
      const std::string what = cat(ir::op_info(c.op).name, " ", str(sp.x), " ", str(sp.y));
      for (Numerics m : kModes) {
        const std::vector<double> xs = x.stored(m), ys = y.stored(m);
        std::vector<double> ref(static_cast<std::size_t>(shape_numel(out_shape)));
        for (std::size_t i = 0; i < ref.size(); ++i) {
          const auto idx = unravel(static_cast<std::int64_t>(i), out_shape);
          ref[i] = c.f(xs[static_cast<std::size_t>(broadcast_source(idx, sp.x))],
                       ys[static_cast<std::size_t>(broadcast_source(idx, sp.y))]);
        }
        const Tensor got = run_op({x, y}, [&](ir::Builder& b, const auto& v) { return b.op(c.op, {v[0], v[1]}); }, m);
        expect_close(got, out_shape, ref, m, what);
      }
    }
  }
}

struct UnaryCase {
  Op op;
  double (*f)(double);
  float lo, hi;
};

double gelu_ref(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

const UnaryCase kUnaryCases[] = {
    {Op::neg, [](double x) { return -x; }, -10, 10},
    {Op::exp, [](double x) { return std::exp(x); }, -8, 8},
    {Op::log, [](double x) { return std::log(x); }, 0.01f, 100},
    {Op::sqrt, [](double x) { return std::sqrt(x); }, 0, 100},
    {Op::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 0.01f, 100},
    {Op::tanh, [](double x) { return std::tanh(x); }, -5, 5},
    {Op::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -10, 10},
    {Op::relu, [](double x) { return x > 0 ? x : 0.0; }, -5, 5},
    {Op::gelu, gelu_ref, -6, 6},
    {Op::silu, [](double x) { return x / (1.0 + std::exp(-x)); }, -10, 10},
};

const Shape kUnaryShapes[] = {{}, {1}, {7}, {3, 5}, {2, 1, 4}, {1, 1, 1}, {4, 3, 2, 5}, {301, 257}};

TEST(Elementwise, UnaryOps) {
  std::uint64_t seed = 200;
  for (const UnaryCase& c : kUnaryCases) {
    for (const Shape& s : kUnaryShapes) {
      Rng rng(seed++);
      const Input x = float_input(rng, "x", s, c.lo, c.hi);
      const std::string what = cat(ir::op_info(c.op).name, " ", str(s));
      for (Numerics m : kModes) {
        std::vector<double> ref = x.stored(m);
        for (double& v : ref) v = c.f(v);
        const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.op(c.op, {v[0]}); }, m);
        expect_close(got, s, ref, m, what);
      }
    }
  }
}

// gelu far into its negative tail, where 1 + tanh(u) would cancel: the result is tiny but its
// relative error must stay small.
TEST(Elementwise, GeluNegativeTailKeepsRelativeAccuracy) {
  Input x{"x", {6}, {-3.0f, -4.0f, -5.0f, -6.0f, -7.0f, -8.0f}};
  std::vector<double> ref = x.stored(Numerics::f32);
  for (double& v : ref) v = gelu_ref(v);
  const Tensor got = run_op({x}, [](ir::Builder& b, const auto& v) { return b.gelu(v[0]); }, Numerics::f32);
  expect_close(got, {6}, ref, Numerics::f32, "gelu tail", {.f32_rel = 2e-5});
}

TEST(Elementwise, ReluKeepsNanAndExpOverflowsToInfinity) {
  const float nan = std::nanf("");
  Input x{"x", {3}, {nan, -1.0f, 100.0f}};
  const Tensor r = run_op({x}, [](ir::Builder& b, const auto& v) { return b.relu(v[0]); }, Numerics::f32);
  const std::vector<float> rv = r.to_floats();
  EXPECT_TRUE(std::isnan(rv[0]));
  EXPECT_EQ(rv[1], 0.0f);
  EXPECT_EQ(rv[2], 100.0f);
  // exp(100) overflows fp32; exp(12) = 162755 overflows fp16 only.
  Input y{"x", {2}, {100.0f, 12.0f}};
  const std::vector<float> e32 =
      run_op({y}, [](ir::Builder& b, const auto& v) { return b.exp(v[0]); }, Numerics::f32).to_floats();
  EXPECT_TRUE(std::isinf(e32[0]));
  EXPECT_NEAR(e32[1], std::exp(12.0), 1.0);
  const std::vector<float> e16 =
      run_op({y}, [](ir::Builder& b, const auto& v) { return b.exp(v[0]); }, Numerics::f16).to_floats();
  EXPECT_TRUE(std::isinf(e16[1]));
}

TEST(Elementwise, Clamp) {
  const std::pair<double, double> bounds[] = {{-1, 1}, {0, 0.5}, {-10, 10}, {0.3, 0.3}, {-2.5, -0.1}};
  std::uint64_t seed = 300;
  for (const auto& bound : bounds) {
    const double lo = bound.first, hi = bound.second;  // lambdas capture these (clang 14)
    for (const Shape& s : kUnaryShapes) {
      Rng rng(seed++);
      const Input x = float_input(rng, "x", s, -3, 3);
      for (Numerics m : kModes) {
        std::vector<double> ref = x.stored(m);
        for (double& v : ref) v = std::min(std::max(v, lo), hi);
        const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.clamp(v[0], lo, hi); }, m);
        expect_close(got, s, ref, m, cat("clamp [", lo, ", ", hi, "] ", str(s)));
      }
    }
  }
}

struct WhereShapes {
  Shape c, a, b;
};

const WhereShapes kWhereShapes[] = {
    {{7}, {7}, {7}},          {{3, 5}, {5}, {3, 1}},       {{}, {2, 3}, {2, 3}},
    {{2, 3}, {}, {}},         {{4, 1}, {1, 6}, {4, 6}},    {{2, 1, 3}, {5, 1}, {1, 5, 3}},
    {{1}, {1}, {1}},          {{1, 1, 4}, {3, 1}, {2, 1, 1}}, {{301, 257}, {257}, {301, 1}},
};

TEST(Elementwise, WhereBroadcastsAllThreeInputs) {
  std::uint64_t seed = 400;
  for (DType dt : {DType::f32, DType::i32}) {
    for (const WhereShapes& ws : kWhereShapes) {
      Rng rng(seed++);
      Input cond{"cond", ws.c, {}, DType::boolean};
      for (std::int64_t i = 0; i < shape_numel(ws.c); ++i) cond.values.push_back(rng.uniform() < 0.5f ? 1.0f : 0.0f);
      Input a = float_input(rng, "a", ws.a, -5, 5);
      Input b = float_input(rng, "b", ws.b, -5, 5);
      a.dtype = b.dtype = dt;
      if (dt == DType::i32) {
        for (float& v : a.values) v = std::round(v * 1000);
        for (float& v : b.values) v = std::round(v * 1000) + 20000;  // never equal to a's
      }
      const Shape out_shape = broadcast(ws.c, broadcast(ws.a, ws.b));
      const std::string what = cat("where ", dtype_name(dt), " ", str(ws.c), " ", str(ws.a), " ", str(ws.b));
      for (Numerics m : kModes) {
        const std::vector<double> cs = cond.stored(m), as = a.stored(m), bs = b.stored(m);
        std::vector<double> ref(static_cast<std::size_t>(shape_numel(out_shape)));
        for (std::size_t i = 0; i < ref.size(); ++i) {
          const auto idx = unravel(static_cast<std::int64_t>(i), out_shape);
          const bool c = cs[static_cast<std::size_t>(broadcast_source(idx, ws.c))] != 0;
          ref[i] = c ? as[static_cast<std::size_t>(broadcast_source(idx, ws.a))]
                     : bs[static_cast<std::size_t>(broadcast_source(idx, ws.b))];
        }
        const Tensor got = run_op({cond, a, b}, [](ir::Builder& bb, const auto& v) { return bb.where(v[0], v[1], v[2]); }, m);
        EXPECT_EQ(got.dtype(), dt);
        expect_equal(got, out_shape, ref, cat(what, " [", mode_str(m), "]"));
      }
    }
  }
}

}  // namespace
}  // namespace orion::test
