// engine::compare_logits and engine::teacher_forced_logits: the relative L2 error and top-1
// agreement `orion bench decode` reports of a weight format or of ane-sim, on logits whose
// answers are known by hand.
#include "engine/logit_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace orion::engine {
namespace {

TEST(LogitCompare, IdenticalLogitsAgreeCompletely) {
  const LogitRows a = {{1, 2, 3}, {3, 2, 1}};
  const LogitAgreement r = compare_logits(a, a);
  EXPECT_EQ(r.rel_l2, 0.0);
  EXPECT_EQ(r.top1, 1.0);
}

TEST(LogitCompare, TheErrorIsOverEveryRowAndTopOneCountsRows) {
  // ||want|| = sqrt(9 + 16) = 5 over both rows; the difference (0, 0) and (1, 2): sqrt(5).
  const LogitRows want = {{3, 0}, {0, 4}};
  const LogitRows got = {{3, 0}, {1, 2}};
  const LogitAgreement r = compare_logits(want, got);
  EXPECT_DOUBLE_EQ(r.rel_l2, std::sqrt(5.0) / 5.0);
  EXPECT_EQ(r.top1, 1.0);
  const LogitRows flipped = {{0, 3}, {0, 4}};  // the first row's top token moves
  EXPECT_EQ(compare_logits(want, flipped).top1, 0.5);
}

TEST(LogitCompare, MismatchedShapesAreErrors) {
  const LogitRows two = {{1, 2}, {2, 1}};
  EXPECT_THROW(compare_logits(two, LogitRows{{1, 2}}), Error);
  EXPECT_THROW(compare_logits(two, LogitRows{{1, 2}, {2, 1, 0}}), Error);
  EXPECT_THROW(compare_logits(LogitRows{}, LogitRows{}), Error);
  EXPECT_THROW(compare_logits(LogitRows{{0, 0}}, LogitRows{{1, 0}}), Error);
}

// A decoder whose logits are its position and the token: what teacher forcing fed it, in order.
class PositionEchoDecoder final : public Decoder {
 public:
  std::vector<float> prefill(std::span<const std::int32_t> tokens) override {
    position_ += static_cast<std::int64_t>(tokens.size());
    return {static_cast<float>(position_), static_cast<float>(tokens.back())};
  }
  std::int64_t position() const override { return position_; }
  std::int64_t context() const override { return 100; }
  void reset() override { position_ = 0; }

 private:
  std::int64_t position_ = 0;
};

TEST(LogitCompare, TeacherForcingDecodesOneTokenAtATime) {
  PositionEchoDecoder d;
  const std::vector<std::int32_t> tokens = {7, 8, 9};
  EXPECT_EQ(teacher_forced_logits(d, tokens), (LogitRows{{1, 7}, {2, 8}, {3, 9}}));
  EXPECT_EQ(d.position(), 3);
}

}  // namespace
}  // namespace orion::engine
