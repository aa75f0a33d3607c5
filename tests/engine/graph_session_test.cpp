// The graph session (engine/graph_session.h) and perplexity over sliding windows
// (engine/perplexity.h) on a small GPT-2; its logits against torch's: model/gpt2_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "engine/graph_session.h"
#include "engine/perplexity.h"
#include "model/gpt2/gpt2_model.h"

namespace orion::engine {
namespace {

TEST(GraphSession, RefusesToOverflowTheContextAndForeignTokens) {
  model::Gpt2Config c;
  c.n_layer = 1; c.n_embd = 8; c.n_head = 2; c.n_positions = 16; c.vocab_size = 20; c.eos_token_id = 0;
  const model::Gpt2Model m = model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 1), "test");
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
  model::Gpt2Config c;
  c.n_layer = 1; c.n_embd = 16; c.n_head = 2; c.n_positions = 32; c.vocab_size = 40; c.eos_token_id = 0;
  const model::Gpt2Model m = model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 5), "test");
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
}  // namespace orion::engine
