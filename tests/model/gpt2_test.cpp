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
#include "model/gpt2_session.h"
#include "model/perplexity.h"
#include "large_model_tests.h"

namespace orion::model {
namespace {

struct Golden {
  std::string name;
  Gpt2Config config;
  std::uint64_t seed = 0;
  std::vector<std::int32_t> tokens;
  std::vector<std::int64_t> vocab_ids;
  std::vector<std::vector<double>> logits;  // [position][vocab_ids]
  std::vector<double> logsumexp;            // [position]
};

Golden load_golden(const std::string& name) {
  const std::string path = std::string(ORION_SOURCE_DIR) + "/tests/reference/golden/gpt2_" + name + ".json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("missing golden file " + path + " (tests/reference/make_golden.sh)");
  const auto j = nlohmann::json::parse(f);
  Golden g;
  g.name = name;
  const auto& c = j.at("config");
  g.config.n_layer = c.at("n_layer");
  g.config.n_embd = c.at("n_embd");
  g.config.n_head = c.at("n_head");
  g.config.n_positions = c.at("n_positions");
  g.config.vocab_size = c.at("vocab_size");
  g.config.layer_norm_epsilon = c.at("layer_norm_epsilon");
  g.config.eos_token_id = 0;
  g.seed = j.at("seed");
  g.tokens = j.at("tokens").get<std::vector<std::int32_t>>();
  g.vocab_ids = j.at("vocab_ids").get<std::vector<std::int64_t>>();
  g.logits = j.at("logits").get<std::vector<std::vector<double>>>();
  g.logsumexp = j.at("logsumexp").get<std::vector<double>>();
  return g;
}

double logsumexp(std::span<const float> row) {
  double mx = -INFINITY, s = 0;
  for (float v : row) mx = std::max(mx, static_cast<double>(v));
  for (float v : row) s += std::exp(v - mx);
  return mx + std::log(s);
}

// Relative error of one row of logits against the golden row: max |a - g| over the golden
// ids, divided by the row's largest |g| (logits near zero make an elementwise ratio
// meaningless); and the log-sum-exp of the whole row, which every logit enters.
void expect_row_matches(const Golden& g, std::size_t pos, std::span<const float> row, double tol) {
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < g.vocab_ids.size(); ++i) {
    const double ref = g.logits[pos][i];
    max_diff = std::max(max_diff, std::abs(row[static_cast<std::size_t>(g.vocab_ids[i])] - ref));
    max_ref = std::max(max_ref, std::abs(ref));
  }
  EXPECT_LT(max_diff / max_ref, tol) << g.name << " position " << pos;
  const double lse = logsumexp(row);
  EXPECT_LT(std::abs(lse - g.logsumexp[pos]) / std::max(1.0, std::abs(g.logsumexp[pos])), tol)
      << g.name << " position " << pos << " log-sum-exp " << lse << " vs " << g.logsumexp[pos];
}

// The 124M model takes seconds to initialise: build each model once for all tests.
const Gpt2Model& golden_model(const Golden& g) {
  static std::map<std::string, Gpt2Model> models;
  auto it = models.find(g.name);
  if (it == models.end())
    it = models.emplace(g.name, Gpt2Model::from_weights(g.config, gpt2_init_weights(g.config, g.seed), g.name)).first;
  return it->second;
}

class Gpt2Golden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "124m") ORION_SKIP_LARGE_MODEL_TEST();
  }
};

TEST_P(Gpt2Golden, PrefillMatchesTorch) {
  const Golden g = load_golden(GetParam());
  Gpt2Session s(golden_model(g));
  const Tensor logits = s.window_logits(g.tokens);
  const auto V = static_cast<std::size_t>(g.config.vocab_size);
  for (std::size_t t = 0; t < g.tokens.size(); ++t)
    expect_row_matches(g, t, std::span(logits.data<float>() + t * V, V), 1e-4);
}

TEST_P(Gpt2Golden, KvCacheDecodingMatchesTorchAndRecomputation) {
  const Golden g = load_golden(GetParam());
  Gpt2Session s(golden_model(g));
  const std::size_t prompt = 8;
  ASSERT_EQ(g.tokens.size(), prompt + 32);
  std::vector<float> last = s.prefill(std::span(g.tokens).first(prompt));
  expect_row_matches(g, prompt - 1, last, 1e-4);
  const Tensor full = s.window_logits(g.tokens);  // the whole prefix recomputed at once
  const auto V = static_cast<std::size_t>(g.config.vocab_size);
  for (std::size_t t = prompt; t < g.tokens.size(); ++t) {
    last = s.decode(g.tokens[t]);
    expect_row_matches(g, t, last, 1e-4);
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < V; ++i) {
      const float r = full.data<float>()[t * V + i];
      max_diff = std::max(max_diff, static_cast<double>(std::abs(last[i] - r)));
      max_ref = std::max(max_ref, static_cast<double>(std::abs(r)));
    }
    EXPECT_LT(max_diff / max_ref, 1e-5) << g.name << " decode step at position " << t;
  }
  EXPECT_EQ(s.position(), static_cast<std::int64_t>(g.tokens.size()));
}

INSTANTIATE_TEST_SUITE_P(Models, Gpt2Golden, ::testing::Values("tiny", "small", "124m"));

TEST(Gpt2Session, RefusesToOverflowTheContextAndForeignTokens) {
  Gpt2Config c;
  c.n_layer = 1; c.n_embd = 8; c.n_head = 2; c.n_positions = 16; c.vocab_size = 20; c.eos_token_id = 0;
  const Gpt2Model m = Gpt2Model::from_weights(c, gpt2_init_weights(c, 1), "test");
  Gpt2Session s(m);
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
  Gpt2Session s(m);
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
