// The GPT-2 training graph (model/gpt2.h with loss and batch) differentiated whole: every
// param's gradient against fp64 finite differences on sampled coordinates, the CPU executor
// against the fp64 interpreter, and a batch of two windows against two single windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/random.h"
#include "exec/cpu/executor.h"
#include "model/gpt2.h"
#include "train/autodiff.h"
#include "train/grad_test_util.h"

namespace orion::train {
namespace {

using testing::F64Bindings;
using testing::F64Tensor;

model::Gpt2Config tiny() {
  model::Gpt2Config c;
  c.n_embd = 16;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_positions = 8;
  c.vocab_size = 37;
  return c;
}

constexpr std::int64_t kSeq = 8;

// Weights large enough that every gradient is far from zero; gains around 1.
F64Bindings random_model(const ir::Graph& g, Rng& rng) {
  F64Bindings bind;
  for (ir::ValueId id : g.nodes_of(ir::Op::param)) {
    const ir::Node& n = g.node(id);
    F64Tensor t{DType::f32, n.type.shape, {}};
    const bool gain = n.type.rank() == 1 && !n.name.ends_with(".bias");
    for (std::int64_t i = 0; i < n.type.numel(); ++i) t.v.push_back((gain ? 1.0 : 0.0) + 0.3 * rng.normal());
    bind.emplace(n.name, std::move(t));
  }
  return bind;
}

F64Tensor ints(std::vector<double> v) { return {DType::i32, {static_cast<std::int64_t>(v.size())}, std::move(v)}; }

// tokens, positions and targets of `batch` windows, from `rng`.
void add_batch(F64Bindings& bind, std::int64_t batch, Rng& rng) {
  std::vector<double> tokens, positions, targets;
  for (std::int64_t i = 0; i < batch * kSeq; ++i) {
    tokens.push_back(static_cast<double>(rng.below(37)));
    positions.push_back(static_cast<double>(i % kSeq));
    targets.push_back(static_cast<double>(rng.below(37)));
  }
  bind["tokens"] = ints(tokens);
  bind["positions"] = ints(positions);
  bind["targets"] = ints(targets);
}

TEST(Gpt2Training, EveryParamGradientMatchesFiniteDifferences) {
  const ir::Graph fwd = model::gpt2_graph(tiny(), {.seq = kSeq, .batch = 2, .loss = true});
  ASSERT_EQ(fwd.outputs().size(), 1u);
  std::vector<std::string> params;
  for (ir::ValueId id : fwd.nodes_of(ir::Op::param)) params.push_back(fwd.node(id).name);
  const ir::Graph bwd = gradient_graph(fwd, "loss", params);
  Rng rng(7);
  F64Bindings bind = random_model(fwd, rng);
  add_batch(bind, 2, rng);
  const std::vector<F64Tensor> out = testing::run_f64(bwd, bind);
  ASSERT_EQ(out.size(), 1 + params.size());
  EXPECT_GT(out[0].v[0], 1.0);  // random weights: a loss near log(37), not a degenerate graph
  int checked = 0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const F64Tensor& g = out[1 + k];
    // Three coordinates per param, and for the embeddings the rows of tokens that occur.
    std::vector<std::int64_t> coords;
    for (int s = 0; s < 3; ++s) coords.push_back(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(g.numel()))));
    if (params[k] == "wte.weight") coords.push_back(static_cast<std::int64_t>(bind.at("tokens").v[0]) * 16 + 3);
    for (std::int64_t i : coords) {
      const double fd = testing::finite_difference(fwd, bind, params[k], i, 1e-5);
      EXPECT_LT(std::fabs(g.v[static_cast<std::size_t>(i)] - fd), 1e-6 * std::max(1.0, std::fabs(fd)))
          << params[k] << "[" << i << "]: autodiff " << g.v[static_cast<std::size_t>(i)] << ", differences " << fd;
      ++checked;
    }
  }
  EXPECT_GE(checked, 3 * 16);
}

TEST(Gpt2Training, CpuExecutorAgreesWithTheF64Interpreter) {
  const ir::Graph fwd = model::gpt2_graph(tiny(), {.seq = kSeq, .batch = 2, .loss = true});
  std::vector<std::string> params;
  for (ir::ValueId id : fwd.nodes_of(ir::Op::param)) params.push_back(fwd.node(id).name);
  const ir::Graph bwd = gradient_graph(fwd, "loss", params);
  Rng rng(8);
  F64Bindings bind = random_model(fwd, rng);
  add_batch(bind, 2, rng);
  exec::Bindings tb;
  for (auto& [name, t] : bind) {
    tb.emplace(name, testing::to_tensor(t));
    t = testing::to_f64(tb.at(name));
  }
  const std::vector<F64Tensor> want = testing::run_f64(bwd, bind);
  const std::vector<Tensor> got = exec::CpuExecutor(bwd, {exec::Numerics::f32, 2}).run(tb);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    double scale = 1e-3;
    for (double v : want[k].v) scale = std::max(scale, std::fabs(v));
    const std::vector<float> g = got[k].to_floats();
    for (std::size_t i = 0; i < g.size(); ++i)
      ASSERT_LT(std::fabs(g[i] - want[k].v[i]) / scale, 1e-4) << (k == 0 ? "loss" : params[k - 1]) << "[" << i << "]";
  }
}

TEST(Gpt2Training, BatchLossIsTheMeanOfItsWindows) {
  const ir::Graph two = model::gpt2_graph(tiny(), {.seq = kSeq, .batch = 2, .loss = true});
  const ir::Graph one = model::gpt2_graph(tiny(), {.seq = kSeq, .loss = true});
  Rng rng(9);
  F64Bindings bind = random_model(two, rng);
  add_batch(bind, 2, rng);
  auto window = [&](std::int64_t w) {
    F64Bindings b = bind;
    for (const char* name : {"tokens", "positions", "targets"}) {
      std::vector<double>& v = b.at(name).v;
      v = std::vector<double>(v.begin() + w * kSeq, v.begin() + (w + 1) * kSeq);
      b.at(name).shape = {kSeq};
    }
    return b;
  };
  const double l2 = testing::run_f64(two, bind)[0].v[0];
  const double l0 = testing::run_f64(one, window(0))[0].v[0], l1 = testing::run_f64(one, window(1))[0].v[0];
  EXPECT_NEAR(l2, (l0 + l1) / 2, 1e-12);
  EXPECT_GT(std::fabs(l0 - l1), 1e-3);  // the windows differ, so the mean is a real check
  // The executor (f32) too.
  auto tensors = [](const F64Bindings& b) {
    exec::Bindings t;
    for (const auto& [name, v] : b) t.emplace(name, testing::to_tensor(v));
    return t;
  };
  const float e2 = exec::CpuExecutor(two).run(tensors(bind))[0].to_floats()[0];
  const float e0 = exec::CpuExecutor(one).run(tensors(window(0)))[0].to_floats()[0];
  const float e1 = exec::CpuExecutor(one).run(tensors(window(1)))[0].to_floats()[0];
  EXPECT_NEAR(e2, (e0 + e1) / 2, 1e-5);
}

}  // namespace
}  // namespace orion::train
