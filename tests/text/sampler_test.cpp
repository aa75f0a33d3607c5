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
