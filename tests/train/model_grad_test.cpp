// Every architecture's training graph (model/gpt2/gpt2.h, model/llama/llama.h with loss and batch)
// differentiated whole: every param's gradient against fp64 finite differences on sampled
// coordinates, the CPU executor against the fp64 interpreter, and the batched loss against the
// mean cross-entropy of each window's logits from the inference graph, computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/random.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2.h"
#include "model/llama/llama.h"
#include "train/autodiff.h"
#include "train/grad_test_util.h"

namespace orion::train {
namespace {

using testing::F64Bindings;
using testing::F64Tensor;

constexpr std::int64_t kSeq = 8, kVocab = 37, kDim = 16;

struct ModelCase {
  std::string name;
  std::function<ir::Graph(const model::DecoderGraphOptions&)> graph;
  std::string embedding;  // the token embedding's param, [kVocab, kDim]
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

model::Gpt2Config tiny_gpt2() {
  model::Gpt2Config c;
  c.n_embd = kDim;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_positions = kSeq;
  c.vocab_size = kVocab;
  return c;
}

// Grouped-query attention (4 query heads reading 2 key/value heads), tied or not.
model::LlamaConfig grad_llama(bool tied) {
  model::LlamaConfig c;
  c.hidden_size = kDim;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = kSeq;
  c.vocab_size = kVocab;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<ModelCase> cases() {
  return {{"Gpt2", [](const model::DecoderGraphOptions& o) { return model::gpt2_graph(tiny_gpt2(), o); }, "wte.weight"},
          {"LlamaGqaUntied", [](const model::DecoderGraphOptions& o) { return model::llama_graph(grad_llama(false), o); },
           "model.embed_tokens.weight"},
          {"LlamaGqaTied", [](const model::DecoderGraphOptions& o) { return model::llama_graph(grad_llama(true), o); },
           "model.embed_tokens.weight"},
          {"Qwen3BiasHeadDim", [](const model::DecoderGraphOptions& o) {
             model::LlamaConfig c = grad_llama(true);
             c.model_type = "qwen3";
             c.qk_norm = c.qkv_bias = c.o_bias = true;
             c.head_size = 6;
             return model::llama_graph(c, o);
           },
           "model.embed_tokens.weight"},
          // A Gated DeltaNet layer (2 key heads read by 4 value heads; the 8 positions one chunk,
          // whose inverse takes three doublings) before a gated full-attention layer with half
          // of each head rotated.
          {"Qwen3_5Hybrid", [](const model::DecoderGraphOptions& o) {
             model::LlamaConfig c = grad_llama(true);
             c.model_type = "qwen3_5_text";
             c.qk_norm = c.norm_plus_one = c.attn_output_gate = true;
             c.head_size = 8;
             c.partial_rotary_factor = 0.5;
             c.linear_layers = {true, false};
             c.linear = {.key_heads = 2, .value_heads = 4, .key_head_dim = 4, .value_head_dim = 3, .conv_kernel = 3};
             return model::llama_graph(c, o);
           },
           "model.embed_tokens.weight"}};
}

model::DecoderGraphOptions training(std::int64_t batch) { return {.seq = kSeq, .batch = batch, .loss = true}; }

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
    tokens.push_back(static_cast<double>(rng.below(kVocab)));
    positions.push_back(static_cast<double>(i % kSeq));
    targets.push_back(static_cast<double>(rng.below(kVocab)));
  }
  bind["tokens"] = ints(tokens);
  bind["positions"] = ints(positions);
  bind["targets"] = ints(targets);
  // Each target weighs 1 / (the batch's targets): the loss is their mean.
  bind["loss_weights"] = F64Tensor{DType::f32, {batch * kSeq}, std::vector<double>(static_cast<std::size_t>(batch * kSeq), 1.0 / static_cast<double>(batch * kSeq))};
}

// Window w of a batch's bindings alone (its tokens, positions and targets; the same weights).
F64Bindings window(const F64Bindings& bind, std::int64_t w) {
  F64Bindings b = bind;
  for (const char* name : {"tokens", "positions", "targets", "loss_weights"}) {
    std::vector<double>& v = b.at(name).v;
    v = std::vector<double>(v.begin() + w * kSeq, v.begin() + (w + 1) * kSeq);
    b.at(name).shape = {kSeq};
  }
  return b;
}

TensorMap tensors(const F64Bindings& b) {
  TensorMap t;
  for (const auto& [name, v] : b) t.emplace(name, testing::to_tensor(v));
  return t;
}

std::vector<std::string> param_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (ir::ValueId id : g.nodes_of(ir::Op::param)) names.push_back(g.node(id).name);
  return names;
}

class TrainingGraph : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TrainingGraph, EveryParamGradientMatchesFiniteDifferences) {
  const ir::Graph fwd = GetParam().graph(training(2));
  ASSERT_EQ(fwd.outputs().size(), 1u);
  const std::vector<std::string> params = param_names(fwd);
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
    // Three coordinates per param, and for the embedding a row of a token that occurs.
    std::vector<std::int64_t> coords;
    for (int s = 0; s < 3; ++s) coords.push_back(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(g.numel()))));
    if (params[k] == GetParam().embedding) coords.push_back(static_cast<std::int64_t>(bind.at("tokens").v[0]) * kDim + 3);
    for (std::int64_t i : coords) {
      const double fd = testing::finite_difference(fwd, bind, params[k], i, 1e-5);
      EXPECT_LT(std::fabs(g.v[static_cast<std::size_t>(i)] - fd), 1e-6 * std::max(1.0, std::fabs(fd)))
          << params[k] << "[" << i << "]: autodiff " << g.v[static_cast<std::size_t>(i)] << ", differences " << fd;
      ++checked;
    }
  }
  EXPECT_GE(checked, 3 * 16);
}

TEST_P(TrainingGraph, CpuExecutorAgreesWithTheF64Interpreter) {
  const ir::Graph fwd = GetParam().graph(training(2));
  const std::vector<std::string> params = param_names(fwd);
  const ir::Graph bwd = gradient_graph(fwd, "loss", params);
  Rng rng(8);
  F64Bindings bind = random_model(fwd, rng);
  add_batch(bind, 2, rng);
  const TensorMap tb = tensors(bind);
  for (auto& [name, t] : bind) t = testing::to_f64(tb.at(name));  // the same f32-rounded values
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

// Cross-entropy written out here: log-sum-exp of each row of logits [kSeq, kVocab] minus the
// target's logit, averaged over the rows.
double mean_cross_entropy(const F64Tensor& logits, const F64Tensor& targets) {
  double sum = 0;
  for (std::int64_t r = 0; r < kSeq; ++r) {
    const double* row = logits.v.data() + r * kVocab;
    const double top = *std::max_element(row, row + kVocab);
    double z = 0;
    for (std::int64_t j = 0; j < kVocab; ++j) z += std::exp(row[j] - top);
    sum += top + std::log(z) - row[static_cast<std::int64_t>(targets.v[static_cast<std::size_t>(r)])];
  }
  return sum / kSeq;
}

TEST_P(TrainingGraph, BatchLossIsTheMeanCrossEntropyOfEachWindowsInferenceLogits) {
  constexpr std::int64_t kBatch = 3;
  const ir::Graph batched = GetParam().graph(training(kBatch));
  const ir::Graph inference = GetParam().graph({.seq = kSeq});  // one window, logits out
  Rng rng(9);
  F64Bindings bind = random_model(batched, rng);
  add_batch(bind, kBatch, rng);
  std::vector<double> per_window;
  for (std::int64_t w = 0; w < kBatch; ++w) {
    const F64Bindings one = window(bind, w);
    const std::vector<F64Tensor> out = testing::run_f64(inference, one);
    ASSERT_EQ(out[0].shape, (Shape{kSeq, kVocab}));
    per_window.push_back(mean_cross_entropy(out[0], one.at("targets")));
  }
  const double mean = (per_window[0] + per_window[1] + per_window[2]) / kBatch;
  EXPECT_NEAR(testing::run_f64(batched, bind)[0].v[0], mean, 1e-12);
  EXPECT_GT(std::fabs(per_window[0] - per_window[1]), 1e-3);  // the windows differ, so the mean is a real check
  // The executor (f32) too.
  EXPECT_NEAR(exec::CpuExecutor(batched).run(tensors(bind))[0].to_floats()[0], mean, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, TrainingGraph, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& p) { return p.param.name; });

}  // namespace
}  // namespace orion::train
