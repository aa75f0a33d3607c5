// GPT-2 against golden logits from an independent torch implementation
// (tests/reference/gpt2_reference.py, float64), for prefill and for KV-cache decoding.
// The models are rebuilt here from their seeds: gpt2_init_weights is what `orion init`
// writes, and its random numbers are the same on every platform.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/gpt2/gpt2_model.h"
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

}  // namespace
}  // namespace orion::model
