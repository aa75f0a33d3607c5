#pragma once
// The golden logits files of tests/reference/ (written by gpt2_reference.py and
// llama_reference.py, torch in float64): loading them, and comparing a row of logits with one,
// shared by every architecture's golden test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/causal_lm.h"
#include "engine/graph_session.h"

namespace orion::model::testing {

struct GoldenLogits {
  std::string name;
  nlohmann::json config;  // the keys the reference copied from the model's config.json
  std::uint64_t seed = 0;
  std::vector<std::int32_t> tokens;
  std::vector<std::int64_t> vocab_ids;
  std::vector<std::vector<double>> logits;  // [position][vocab_ids]
  std::vector<double> logsumexp;            // [position]
};

// tests/reference/golden/FILE.json
inline GoldenLogits load_golden(const std::string& file) {
  const std::string path = std::string(ORION_SOURCE_DIR) + "/tests/reference/golden/" + file + ".json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("missing golden file " + path + " (tests/reference/make_golden.sh)");
  const auto j = nlohmann::json::parse(f);
  GoldenLogits g;
  g.name = file;
  g.config = j.at("config");
  g.seed = j.at("seed");
  g.tokens = j.at("tokens").get<std::vector<std::int32_t>>();
  g.vocab_ids = j.at("vocab_ids").get<std::vector<std::int64_t>>();
  g.logits = j.at("logits").get<std::vector<std::vector<double>>>();
  g.logsumexp = j.at("logsumexp").get<std::vector<double>>();
  return g;
}

inline double row_logsumexp(std::span<const float> row) {
  double mx = -INFINITY, s = 0;
  for (float v : row) mx = std::max(mx, static_cast<double>(v));
  for (float v : row) s += std::exp(v - mx);
  return mx + std::log(s);
}

// Relative error of one row of logits against the golden row: max |a - g| over the golden
// ids, divided by the row's largest |g| (logits near zero make an elementwise ratio
// meaningless); and the log-sum-exp of the whole row, which every logit enters.
inline void expect_row_matches(const GoldenLogits& g, std::size_t pos, std::span<const float> row, double tol) {
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < g.vocab_ids.size(); ++i) {
    const double ref = g.logits[pos][i];
    max_diff = std::max(max_diff, std::abs(row[static_cast<std::size_t>(g.vocab_ids[i])] - ref));
    max_ref = std::max(max_ref, std::abs(ref));
  }
  EXPECT_LT(max_diff / max_ref, tol) << g.name << " position " << pos;
  const double lse = row_logsumexp(row);
  EXPECT_LT(std::abs(lse - g.logsumexp[pos]) / std::max(1.0, std::abs(g.logsumexp[pos])), tol)
      << g.name << " position " << pos << " log-sum-exp " << lse << " vs " << g.logsumexp[pos];
}

// Every position of the golden tokens in one window from position 0.
inline void expect_prefill_matches(const GoldenLogits& g, const CausalLm& m, double tol) {
  engine::GraphSession s(m);
  const Tensor logits = s.window_logits(g.tokens);
  const auto V = static_cast<std::size_t>(m.vocab_size());
  for (std::size_t t = 0; t < g.tokens.size(); ++t) expect_row_matches(g, t, std::span(logits.data<float>() + t * V, V), tol);
}

// A prompt of 8 tokens, then 32 decode steps through the KV cache: each step against the golden
// row and against the whole prefix recomputed in one window.
inline void expect_kv_cache_decoding_matches(const GoldenLogits& g, const CausalLm& m, double tol) {
  engine::GraphSession s(m);
  const std::size_t prompt = 8;
  ASSERT_EQ(g.tokens.size(), prompt + 32);
  std::vector<float> last = s.prefill(std::span(g.tokens).first(prompt));
  expect_row_matches(g, prompt - 1, last, tol);
  const Tensor full = s.window_logits(g.tokens);
  const auto V = static_cast<std::size_t>(m.vocab_size());
  for (std::size_t t = prompt; t < g.tokens.size(); ++t) {
    last = s.decode(g.tokens[t]);
    expect_row_matches(g, t, last, tol);
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

}  // namespace orion::model::testing
