// GPT-2 against golden logits from an independent torch implementation
// (tests/reference/gpt2_reference.py, float64), for prefill and for KV-cache decoding.
// The models are rebuilt here from their seeds: gpt2_init_weights is what `orion init`
// writes, and its random numbers are the same on every platform.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/session/graph_session.h"
#include "model/gpt2/gpt2_model.h"
#include "model/session/perplexity.h"
#include "model/golden_logits.h"
#include "test_scale.h"

namespace orion::model {
namespace {

using testing::GoldenLogits;

Gpt2Config golden_config(const GoldenLogits& g) {
  Gpt2Config c;
  c.n_layer = g.config.at("n_layer");
  c.n_embd = g.config.at("n_embd");
  c.n_head = g.config.at("n_head");
  c.n_positions = g.config.at("n_positions");
  c.vocab_size = g.config.at("vocab_size");
  c.layer_norm_epsilon = g.config.at("layer_norm_epsilon");
  c.eos_token_id = 0;
  return c;
}

// The 124M model takes seconds to initialise: build each model once for all tests.
const Gpt2Model& golden_model(const GoldenLogits& g) {
  static std::map<std::string, Gpt2Model> models;
  auto it = models.find(g.name);
  if (it == models.end()) {
    const Gpt2Config c = golden_config(g);
    it = models.emplace(g.name, Gpt2Model::from_weights(c, gpt2_init_weights(c, g.seed), g.name)).first;
  }
  return it->second;
}

class Gpt2Golden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "124m") ORION_SKIP_LARGE_MODEL_TEST();
  }
};

TEST_P(Gpt2Golden, PrefillMatchesTorch) {
  const GoldenLogits g = testing::load_golden("gpt2_" + GetParam());
  testing::expect_prefill_matches(g, golden_model(g), 1e-4);
}

TEST_P(Gpt2Golden, KvCacheDecodingMatchesTorchAndRecomputation) {
  const GoldenLogits g = testing::load_golden("gpt2_" + GetParam());
  testing::expect_kv_cache_decoding_matches(g, golden_model(g), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, Gpt2Golden, ::testing::Values("tiny", "small", "124m"));

TEST(GraphSession, RefusesToOverflowTheContextAndForeignTokens) {
  Gpt2Config c;
  c.n_layer = 1; c.n_embd = 8; c.n_head = 2; c.n_positions = 16; c.vocab_size = 20; c.eos_token_id = 0;
  const Gpt2Model m = Gpt2Model::from_weights(c, gpt2_init_weights(c, 1), "test");
  GraphSession s(m);
  std::vector<std::int32_t> ids(16, 3);
  s.prefill(ids);
  try {
    s.decode(1);
    FAIL() << "decode past the context did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context of 16 tokens is full"), std::string::npos) << e.what();
  }
  s.reset();
  try {
    s.decode(20);
    FAIL() << "a token outside the vocabulary did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 20"), std::string::npos) << e.what();
  }
}

TEST(Gpt2Perplexity, SlidingWindowsScoreEveryTokenOnceWithItsContext) {
  Gpt2Config c;
  c.n_layer = 1; c.n_embd = 16; c.n_head = 2; c.n_positions = 32; c.vocab_size = 40; c.eos_token_id = 0;
  const Gpt2Model m = Gpt2Model::from_weights(c, gpt2_init_weights(c, 5), "test");
  GraphSession s(m);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 50; ++i) ids.push_back((i * 7 + 3) % 40);
  // Windows as long as the text: one pass scores tokens 1..n-1 with all their left context.
  const auto one = evaluate_perplexity(s, std::span(ids).first(30), 30, 30);
  const Tensor l = s.window_logits(std::span(ids).first(30));
  double total = 0;
  for (std::size_t t = 1; t < 30; ++t) total += token_nll(std::span(l.data<float>() + (t - 1) * 40, 40), ids[t]);
  EXPECT_EQ(one.tokens, 29);
  EXPECT_NEAR(one.loss, total / 29, 1e-12);
  // Sliding windows of 32 with stride 16 over 50 tokens: still every token but the first once.
  const auto slid = evaluate_perplexity(s, ids, 32, 16);
  EXPECT_EQ(slid.tokens, 49);
  EXPECT_NEAR(slid.perplexity, std::exp(slid.loss), 1e-9);
}

}  // namespace
}  // namespace orion::model
