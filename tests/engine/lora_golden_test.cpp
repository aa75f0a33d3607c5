// LoRA adapters against torch: a random adapter in PEFT's layout (written by
// tests/reference/lora_reference.py, which also computed the adapted model's logits in float64)
// applied to the model it was made for, on every engine: merged into the weights for the fast
// and graph engines, as the low-rank path of the graph on the CPU executor, and as kernel
// inputs of an ane-sim package.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/testing_temp_dir.h"
#include "engine/decoder_factory.h"
#include "exec/cpu/executor.h"
#include "model/golden_logits.h"
#include "model/lora/lora_graph.h"
#include "model/lora/lora_model.h"
#include "model/model_init.h"

namespace orion::engine {
namespace {

using model::testing::GoldenLogits;

struct LoraGoldenCase {
  std::string golden;  // tests/reference/golden/<golden>.json and the adapter folder <golden>/
  model::InitOptions model;  // as make_golden.sh makes the base model
};

std::vector<LoraGoldenCase> cases() {
  model::InitOptions gpt2;
  gpt2.layers = 3, gpt2.dim = 96, gpt2.heads = 4, gpt2.context = 128, gpt2.vocab = 1000, gpt2.seed = 2;
  model::InitOptions llama;
  llama.arch = "llama", llama.layers = 2, llama.dim = 64, llama.heads = 4, llama.kv_heads = 2, llama.hidden = 160;
  llama.context = 64, llama.vocab = 300, llama.seed = 1;
  return {{"lora_gpt2_small", gpt2}, {"lora_llama_gqa", llama}};
}

void PrintTo(const LoraGoldenCase& c, std::ostream* os) { *os << c.golden; }

std::string adapter_dir(const LoraGoldenCase& c) {
  return std::string(ORION_SOURCE_DIR) + "/tests/reference/golden/" + c.golden;
}

class LoraGolden : public ::testing::TestWithParam<LoraGoldenCase> {
 protected:
  void SetUp() override {
    setenv("ORION_CACHE_DIR", dir_.file("cache").c_str(), 1);
    model::InitOptions o = GetParam().model;
    o.out = dir_.file("base");
    model::init_model(o);
    folder_ = std::make_unique<model::ModelFolder>(model::ModelFolder::load(o.out));
    golden_ = model::testing::load_golden(GetParam().golden);
    ASSERT_EQ(golden_.config.at(GetParam().model.arch == "gpt2" ? "n_layer" : "num_hidden_layers"), o.layers);
  }
  void TearDown() override { unsetenv("ORION_CACHE_DIR"); }
  ChosenDecoder make(DecoderOptions o) {
    o.lora = adapter_dir(GetParam());
    return make_decoder(*folder_, o, [](const std::string&) {});
  }
  // Every row after an 8-token prompt, decoded one token at a time, against the golden rows.
  void expect_decoding_matches(engine::Decoder& d, double tol) {
    std::vector<float> row = d.prefill(std::span(golden_.tokens).first(8));
    model::testing::expect_row_matches(golden_, 7, row, tol);
    for (std::size_t t = 8; t < golden_.tokens.size(); ++t) {
      row = d.decode(golden_.tokens[t]);
      model::testing::expect_row_matches(golden_, t, row, tol);
    }
  }
  testing_util::TempDir dir_;
  std::unique_ptr<model::ModelFolder> folder_;
  GoldenLogits golden_;
};

TEST_P(LoraGolden, MergedIntoTheFastEngineMatchesTorch) {
  ChosenDecoder c = make({});
  ASSERT_EQ(c.kind, EngineKind::fast);
  EXPECT_NE(c.lora.find("merged"), std::string::npos) << c.lora;
  expect_decoding_matches(*c.decoder, 1e-4);
}

TEST_P(LoraGolden, MergedIntoTheGraphEngineMatchesTorch) {
  DecoderOptions o;
  o.graph = true;
  ChosenDecoder c = make(o);
  ASSERT_EQ(c.kind, EngineKind::graph);
  expect_decoding_matches(*c.decoder, 1e-4);
}

// Unmerged: the base weights and the adapter's matrices bound to the graph with the low-rank
// path, run by the CPU executor, as training computes it.
TEST_P(LoraGolden, TheLowRankPathInTheGraphMatchesTorch) {
  const model::CausalLm& lm = folder_->lm();
  const model::LoraAdapter a = model::read_lora_adapter(adapter_dir(GetParam()), lm);
  const auto n = static_cast<std::int64_t>(golden_.tokens.size());
  ir::Graph g = model::with_lora(lm.decoding_graph(n, 0, false), a.config, a.config.scale());
  TensorMap feed = lm.weights();
  for (const auto& [name, t] : a.weights) feed[name] = t;
  feed["tokens"] = Tensor::from_ints({n}, golden_.tokens);
  std::vector<std::int32_t> pos(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  feed["positions"] = Tensor::from_ints({n}, pos);
  exec::CpuExecutor ex(g);
  const Tensor logits = ex.run(feed).at(0);  // the logits, then the keys and values
  const auto V = static_cast<std::size_t>(lm.vocab_size());
  for (std::size_t t = 0; t < golden_.tokens.size(); ++t)
    model::testing::expect_row_matches(golden_, t, std::span(logits.data<float>() + t * V, V), 1e-4);
}

// ane-sim: the base weights baked into the kernels, the adapter's matrices in their inputs;
// fp16 throughout, hence the wider tolerance.
TEST_P(LoraGolden, AsKernelInputsOnAneSimMatchesTorchToFp16) {
  DecoderOptions o;
  o.device = runtime::DeviceKind::ane_sim;
  if (folder_->lm().context() < 128) {
    // The Llama's context of 64: a prefill window of 32, and the 39 positions decoded need a
    // cache of 63, which only attention on the host takes (the device's is a multiple of 32).
    o.run.pkg.seq = 32;
    o.run.pkg.context = 63;
    o.run.pkg.host_attention = true;
  }
  ChosenDecoder c = make(o);
  ASSERT_EQ(c.kind, EngineKind::device);
  EXPECT_NE(c.lora.find("kernels' weight inputs"), std::string::npos) << c.lora;
  expect_decoding_matches(*c.decoder, 2e-2);
  EXPECT_GT(c.run->runner().stats().weight_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(Archs, LoraGolden, ::testing::ValuesIn(cases()),
                         [](const auto& p) { return p.param.golden; });

}  // namespace
}  // namespace orion::engine
