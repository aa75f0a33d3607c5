#include "train/optim/loss_scaler.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace orion::train {
namespace {

TEST(LossScaler, SkipsAndHalvesOnNonFiniteGradients) {
  LossScaler s({.initial = 1024.0, .growth_interval = 3});
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 256.0);
  EXPECT_EQ(s.skipped_steps(), 2);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 256.0);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, GrowsAfterGrowthIntervalCleanStepsInARow) {
  LossScaler s({.initial = 8.0, .growth_interval = 3, .factor = 2.0});
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_TRUE(s.update(true));  // the third clean step in a row
  EXPECT_EQ(s.scale(), 16.0);
  EXPECT_EQ(s.clean_steps(), 0);
  // An overflow resets the run: growth needs three more clean steps after it.
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 16.0);
}

TEST(LossScaler, StaysWithinItsBounds) {
  LossScaler s({.initial = 4.0, .growth_interval = 1, .factor = 4.0, .min_scale = 2.0, .max_scale = 32.0});
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 16.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 32.0);  // 64 capped
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 32.0);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 2.0);  // never below min_scale, however many overflows
  EXPECT_EQ(s.skipped_steps(), 5);
}

TEST(LossScaler, DefaultsAreTheUsualOnes) {
  LossScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  for (int i = 0; i < 999; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(true);
  EXPECT_EQ(s.scale(), 131072.0);
  for (int i = 0; i < 40; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 1.0);
  LossScaler near_top({.initial = 16777216.0, .growth_interval = 1});
  near_top.update(true);
  EXPECT_EQ(near_top.scale(), 16777216.0);  // 2^24
}

TEST(LossScaler, DisabledKeepsScaleOneButStillSkipsNonFiniteSteps) {
  LossScaler s({.growth_interval = 1, .enabled = false});
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScaler, StateRoundTripsThroughJsonAndContinuesTheSame) {
  const LossScalerConfig config{.initial = 64.0, .growth_interval = 4};
  LossScaler a(config);
  for (const bool ok : {true, false, true, true}) a.update(ok);
  const nlohmann::json saved = nlohmann::json::parse(a.to_json().dump());
  EXPECT_EQ(saved, (nlohmann::json{{"scale", 32.0}, {"clean_steps", 2}, {"skipped_steps", 1}}));
  LossScaler b(config);
  b.from_json(saved);
  EXPECT_EQ(b.scale(), 32.0);
  EXPECT_EQ(b.skipped_steps(), 1);
  for (const bool ok : {true, true, false, true, true, true, true}) {
    EXPECT_EQ(a.update(ok), b.update(ok));
    EXPECT_EQ(a.scale(), b.scale());
  }
  EXPECT_EQ(a.to_json(), b.to_json());
}

TEST(LossScaler, BadStateIsRefusedNamingTheField) {
  LossScaler s;
  const auto message = [&](const nlohmann::json& j) {
    try {
      s.from_json(j);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"clean_steps", 0}, {"skipped_steps", 0}}).find("/scale: missing"), std::string::npos);
  EXPECT_NE(message({{"scale", 1e30}, {"clean_steps", 0}, {"skipped_steps", 0}}).find("/scale"), std::string::npos);
  EXPECT_NE(message({{"scale", 2.0}, {"clean_steps", -1}, {"skipped_steps", 0}}).find("/clean_steps"), std::string::npos);
  EXPECT_NE(message({{"scale", 2.0}, {"clean_steps", 0}, {"skipped_steps", "x"}}).find("/skipped_steps"),
            std::string::npos);
  EXPECT_EQ(s.scale(), 65536.0);  // untouched by the refused states
  EXPECT_THROW(LossScaler({.factor = 1.0}), Error);
  EXPECT_THROW(LossScaler({.initial = 0.5}), Error);
  EXPECT_THROW(LossScaler({.growth_interval = 0}), Error);
}

}  // namespace
}  // namespace orion::train
