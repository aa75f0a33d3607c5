// Reverse-mode autodiff: every gradient rule against central finite differences in fp64 (the
// gradient graph run on the fp64 interpreter), the CPU executor running the same gradient
// graphs in f32 and f16 numerics against that interpreter, and gradient_graph's contract.
#include "train/autodiff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "exec/cpu/executor.h"
#include "ir/builder.h"
#include "train/grad_test_util.h"

namespace orion::train {
namespace {

using testing::F64Bindings;
using testing::F64Tensor;

// Relative agreement of two numbers on the scale of `scale`.
double rel_err(double got, double want, double scale) { return std::fabs(got - want) / std::max(1.0, scale); }

double max_abs(const F64Tensor& t) {
  double m = 0;
  for (double v : t.v) m = std::max(m, std::fabs(v));
  return m;
}

TEST(Autodiff, EveryRuleMatchesFiniteDifferencesInF64) {
  std::set<ir::Op> covered;
  std::uint64_t seed = 1;
  for (const testing::GradCase& c : testing::grad_cases()) {
    SCOPED_TRACE(c.name);
    const ir::Graph fwd = testing::loss_graph(c, seed);
    for (const ir::Node& n : fwd.nodes()) covered.insert(n.op);
    const std::vector<std::string> wrt = testing::float_sources(fwd);
    ASSERT_FALSE(wrt.empty());
    const ir::Graph bwd = gradient_graph(fwd, "loss", wrt);
    Rng rng(seed++);
    const F64Bindings bind = testing::random_bindings(fwd, c.domain, rng);
    const std::vector<F64Tensor> out = testing::run_f64(bwd, bind);
    ASSERT_EQ(out.size(), 1 + wrt.size());
    for (std::size_t k = 0; k < wrt.size(); ++k) {
      const F64Tensor& g = out[1 + k];
      ASSERT_EQ(g.shape, bind.at(wrt[k]).shape) << wrt[k];
      for (std::int64_t i = 0; i < g.numel(); ++i) {
        const double fd = testing::finite_difference(fwd, bind, wrt[k], i, 1e-5);
        EXPECT_LT(rel_err(g.v[static_cast<std::size_t>(i)], fd, std::fabs(fd)), 1e-6)
            << "d loss / d " << wrt[k] << "[" << i << "]: rule " << g.v[static_cast<std::size_t>(i)] << ", differences " << fd;
      }
    }
  }
  // Every op with a rule was checked.
  for (const ir::OpInfo& info : ir::all_ops())
    if (info.grad) {
      EXPECT_TRUE(covered.count(info.op)) << "no finite-difference case uses " << info.name;
    }
}

TEST(Autodiff, CpuExecutorRunsGradientGraphsInF32AndF16) {
  std::uint64_t seed = 100;
  for (const testing::GradCase& c : testing::grad_cases()) {
    SCOPED_TRACE(c.name);
    const ir::Graph fwd = testing::loss_graph(c, seed);
    const ir::Graph bwd = gradient_graph(fwd, "loss", testing::float_sources(fwd));
    Rng rng(seed++);
    F64Bindings bind = testing::random_bindings(fwd, c.domain, rng);
    TensorMap tb;
    for (auto& [name, t] : bind) {
      tb.emplace(name, testing::to_tensor(t));
      t = testing::to_f64(tb.at(name));  // the reference sees the same f32 inputs
    }
    const std::vector<F64Tensor> want = testing::run_f64(bwd, bind);
    for (exec::Numerics num : {exec::Numerics::f32, exec::Numerics::f16}) {
      SCOPED_TRACE(std::string(exec::numerics_name(num)));
      // f32: the executor's float arithmetic; f16: every value stored in fp16 (11 bits), as are
      // values declared f16 in f32 mode (the interpreter keeps them exact).
      const bool declares_f16 = std::any_of(bwd.nodes().begin(), bwd.nodes().end(),
                                            [](const ir::Node& n) { return n.type.dtype == DType::f16; });
      const double tol = num == exec::Numerics::f32 && !declares_f16 ? 2e-5 : 3e-2;
      const std::vector<Tensor> got = exec::CpuExecutor(bwd, {num, 2}).run(tb);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        const std::vector<float> g = got[k].to_floats();
        const double scale = max_abs(want[k]);
        for (std::size_t i = 0; i < g.size(); ++i) {
          ASSERT_TRUE(std::isfinite(g[i]));
          EXPECT_LT(rel_err(g[i], want[k].v[i], scale), tol) << "output " << k << " element " << i;
        }
      }
    }
  }
}

ir::Graph scaled_square() {
  ir::Builder b("sq");
  const ir::Value x = b.param("x", DType::f32, {3});
  const ir::Value y = b.input("y", DType::f32, {3});
  b.output(b.name(b.reduce_sum(b.mul(b.mul(x, x), y), {0}), "loss"));
  return b.finish();
}

TEST(Autodiff, OutputsAreTheForwardOutputsThenNamedF32Gradients) {
  const std::vector<std::string> wrt = {"y", "x"};
  const ir::Graph g = gradient_graph(scaled_square(), "loss", wrt);
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "loss");
  EXPECT_EQ(g.node(g.outputs()[1]).name, "grad.y");
  EXPECT_EQ(g.node(g.outputs()[2]).name, "grad.x");
  const TensorMap bind = {{"x", Tensor::from_floats({3}, std::vector<float>{1, 2, 3})},
                               {"y", Tensor::from_floats({3}, std::vector<float>{4, 5, 6})}};
  const auto out = exec::CpuExecutor(g).run(bind);
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{1, 4, 9}));    // x^2
  EXPECT_EQ(out[2].to_floats(), (std::vector<float>{8, 20, 36}));  // 2 x y
}

TEST(Autodiff, SeedInputScalesEveryGradient) {
  const std::vector<std::string> wrt = {"x"};
  const ir::Graph g = gradient_graph(scaled_square(), "loss", wrt, {.seed_input = "loss_scale"});
  TensorMap bind = {{"x", Tensor::from_floats({3}, std::vector<float>{1, 2, 3})},
                         {"y", Tensor::from_floats({3}, std::vector<float>{4, 5, 6})},
                         {"loss_scale", Tensor::scalar(1024.0f)}};
  const auto out = exec::CpuExecutor(g).run(bind);
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{8 * 1024, 20 * 1024, 36 * 1024}));
}

TEST(Autodiff, OnlyWhatTheRequestedGradientsNeedIsBuilt) {
  // d/dy of sum(x^2 y) needs no product x*y backward for x: asking for y alone builds fewer nodes.
  const std::vector<std::string> one = {"y"}, both = {"x", "y"};
  EXPECT_LT(gradient_graph(scaled_square(), "loss", one).size(), gradient_graph(scaled_square(), "loss", both).size());
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Autodiff, ErrorsNameTheProblem) {
  const ir::Graph g = scaled_square();
  const std::vector<std::string> bad = {"nope"};
  expect_error([&] { gradient_graph(g, "loss", bad); }, "%nope (asked for its gradient) is not a param or input");
  const std::vector<std::string> x = {"x"};
  expect_error([&] { gradient_graph(g, "lost", x); }, "no output is named %lost");
  const std::vector<std::string> twice = {"x", "x"};
  expect_error([&] { gradient_graph(g, "loss", twice); }, "asked for twice");
  expect_error([&] { gradient_graph(g, "loss", x, {.seed_input = "y"}); }, "seed input %y");

  ir::Builder b("conv");
  const ir::Value w = b.param("w", DType::f32, {1, 1, 1, 1});
  const ir::Value c = b.name(b.conv(b.input("img", DType::f32, {1, 1, 2, 2}), w), "the_conv");
  b.output(b.name(b.reduce_sum(c, {0, 1, 2, 3}), "loss"));
  const std::vector<std::string> ws = {"w"};
  expect_error([&] { gradient_graph(b.finish(), "loss", ws); }, "%the_conv (conv) lies between the loss");

  ir::Builder v("vec");
  v.output(v.name(v.exp(v.param("p", DType::f32, {2})), "loss"));
  const std::vector<std::string> p = {"p"};
  expect_error([&] { gradient_graph(v.finish(), "loss", p); }, "must be an f32 scalar");
}

TEST(Autodiff, EveryOpHasARuleOrAReason) {
  // Also a static_assert in op_table.cpp; here the reasons are readable.
  for (const ir::OpInfo& info : ir::all_ops())
    EXPECT_NE(info.grad == nullptr, info.no_grad.empty()) << info.name;
}

}  // namespace
}  // namespace orion::train
