#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "text/sampler.h"

namespace orion::text {
namespace {

SamplerOptions opts(float temp, int top_k = 0, float top_p = 1.0f, float penalty = 1.0f, std::uint64_t seed = 1) {
  SamplerOptions o;
  o.temperature = temp;
  o.top_k = top_k;
  o.top_p = top_p;
  o.repetition_penalty = penalty;
  o.seed = seed;
  return o;
}

TEST(Sampler, GreedyPicksTheLargestLogitAndTheLowestIdOnTies) {
  Sampler s(opts(0));
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 2.0f, -1.0f, 1.9f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{3.0f, 1.0f, 3.0f}), 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(s.sample(std::vector<float>{nan, 1.0f, 0.5f}), 1);  // NaN is never chosen
}

TEST(Sampler, TopKOfOneIsGreedyAtAnyTemperature) {
  Sampler s(opts(5.0f, 1));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.0f, 0.3f, 0.1f}), 1);
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  std::vector<float> logits(50);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  auto draw = [&](std::uint64_t seed) {
    Sampler s(opts(1.0f, 0, 1.0f, 1.0f, seed));
    std::vector<std::int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAtTemperatureOne) {
  const std::vector<float> logits{1.0f, 0.0f, -1.0f, 2.0f};
  double z = 0;
  for (float l : logits) z += std::exp(l);
  Sampler s(opts(1.0f));
  const int n = 200000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(s.sample(logits))];
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double p = std::exp(logits[i]) / z;
    const double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(counts[i] / static_cast<double>(n), p, 5 * sd) << "token " << i;
  }
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.3, 0.2 (logits are their logs): top-p 0.7 keeps the first two only.
  const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler s(opts(1.0f, 0, 0.7f));
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 20000; ++i) ++counts[static_cast<std::size_t>(s.sample(logits))];
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / 20000.0, 0.5 / 0.8, 0.02);
  Sampler only_top(opts(1.0f, 0, 0.4f));
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(only_top.sample(logits), 0);
}

TEST(Sampler, RepetitionPenaltyDemotesSeenTokens) {
  const std::vector<float> logits{2.0f, 1.5f, -0.5f};
  const std::vector<std::int32_t> history{0, 0, 2};
  Sampler s(opts(0, 0, 1.0f, 2.0f));
  // 2.0 / 2 = 1.0 < 1.5: token 1 wins; without history token 0 does.
  EXPECT_EQ(s.sample(logits, history), 1);
  EXPECT_EQ(s.sample(logits), 0);
}

TEST(Sampler, RejectsBadOptionsAndHopelessLogits) {
  EXPECT_THROW(Sampler(opts(-1.0f)), Error);
  EXPECT_THROW(Sampler(opts(1.0f, -1)), Error);
  EXPECT_THROW(Sampler(opts(1.0f, 0, 0.0f)), Error);
  EXPECT_THROW(Sampler(opts(1.0f, 0, 1.5f)), Error);
  EXPECT_THROW(Sampler(opts(1.0f, 0, 1.0f, 0.0f)), Error);
  Sampler s(opts(1.0f));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(s.sample(std::vector<float>{inf, -inf}), Error);
  Sampler greedy(opts(0));
  EXPECT_THROW(greedy.sample(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), inf}), Error);
}

}  // namespace
}  // namespace orion::text

namespace orion::text {
namespace {

// OpenAI's definitions, written out here: mu[j] - c[j] * frequency - (c[j] > 0) * presence, and a
// logit bias added; the draws then follow the softmax of the result.
TEST(Sampler, FrequencyPresenceAndBiasFollowOpenAisDefinitions) {
  const std::vector<float> logits{1.0f, 0.5f, -0.25f, 2.0f, 0.0f};
  const std::vector<std::int32_t> prompt{3, 3, 3, 1};        // not penalised: only the answer counts
  const std::vector<std::int32_t> answer{0, 3, 0, 0, 4};     // counts: 0 -> 3, 3 -> 1, 4 -> 1
  SamplerOptions o = opts(1.0f);
  o.frequency_penalty = 0.4f;
  o.presence_penalty = 0.3f;
  o.logit_bias = {{2, 1.5f}, {3, -0.5f}};
  Sampler s(o);
  std::vector<double> want(logits.begin(), logits.end());
  const int count[] = {3, 0, 0, 1, 1};
  for (std::size_t j = 0; j < want.size(); ++j) want[j] -= count[j] * 0.4 + (count[j] > 0 ? 0.3 : 0.0);
  want[2] += 1.5;
  want[3] -= 0.5;
  std::vector<std::int32_t> history = prompt;
  history.insert(history.end(), answer.begin(), answer.end());
  const std::vector<float> got = s.adjusted(logits, history, answer);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6) << "token " << j;
  double z = 0;
  for (double w : want) z += std::exp(w);
  const int n = 200000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(s.sample(logits, history, answer))];
  for (std::size_t j = 0; j < want.size(); ++j) {
    const double p = std::exp(want[j]) / z;
    EXPECT_NEAR(counts[j] / static_cast<double>(n), p, 5 * std::sqrt(p * (1 - p) / n)) << "token " << j;
  }
  // Greedy: a bias of +100 on one id makes it the choice; one of -100 rules the largest out.
  SamplerOptions g = opts(0.0f);
  g.logit_bias = {{4, 100.0f}};
  EXPECT_EQ(Sampler(g).sample(logits), 4);
  g.logit_bias = {{3, -100.0f}};
  EXPECT_EQ(Sampler(g).sample(logits), 0);
}

}  // namespace
}  // namespace orion::text
