#include "train/optim/lr_schedule.h"

#include <gtest/gtest.h>

namespace orion::train {
namespace {

TEST(LrSchedule, WarmsUpLinearlyThenFollowsTheCosineToTheFloor) {
  const LrSchedule s{.peak = 1e-3, .min_lr = 1e-4, .warmup = 10, .total = 110};
  EXPECT_DOUBLE_EQ(s.at(0), 1e-4);  // 1/10 of the peak
  EXPECT_DOUBLE_EQ(s.at(4), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);  // the cosine starts at the peak
  EXPECT_NEAR(s.at(60), 0.5 * (1e-3 + 1e-4), 1e-15);  // half way down the cosine
  EXPECT_NEAR(s.at(110), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(500), 1e-4);
  for (std::int64_t step = 10; step < 110; ++step) EXPECT_GE(s.at(step), s.at(step + 1));
}

TEST(LrSchedule, WithoutWarmUpStartsAtThePeak) {
  const LrSchedule s{.peak = 2.0, .min_lr = 0.0, .warmup = 0, .total = 4};
  EXPECT_DOUBLE_EQ(s.at(0), 2.0);
  EXPECT_NEAR(s.at(2), 1.0, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(4), 0.0);
}

}  // namespace
}  // namespace orion::train
