// quantize_q8 / dequantize_q8: the documented format (absmax / 127 scales, round half away from
// zero, zero blocks) and the documented error bound on random normal weights.
#include "exec/cpu/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace orion::exec::cpu {
namespace {

TEST(Quantize, ErrorWithinHalfAScaleOnRandomNormalWeights) {
  for (int block : {32, 64}) {
    const std::int64_t rows = 37, cols = 768;
    std::vector<float> W(rows * cols);
    Rng rng(static_cast<std::uint64_t>(block));
    rng.fill_normal(W, 0.0f, 0.02f);
    std::vector<std::int8_t> q(W.size());
    std::vector<float> scales(W.size() / static_cast<std::size_t>(block));
    quantize_q8(W.data(), rows, cols, block, q.data(), scales.data());
    std::vector<float> back(W.size());
    dequantize_q8(q.data(), scales.data(), rows, cols, block, back.data());

    double worst = 0;  // the largest |w - w'| in units of its block's scale
    for (std::size_t b = 0; b < scales.size(); ++b) {
      const float* w = W.data() + b * static_cast<std::size_t>(block);
      float absmax = 0;
      for (int i = 0; i < block; ++i) absmax = std::max(absmax, std::fabs(w[i]));
      ASSERT_EQ(scales[b], absmax / 127.0f) << "block " << b;
      for (int i = 0; i < block; ++i) {
        const std::size_t k = b * static_cast<std::size_t>(block) + static_cast<std::size_t>(i);
        ASSERT_GE(q[k], -127);
        ASSERT_EQ(back[k], scales[b] * static_cast<float>(q[k]));  // dequantize is s * q
        // The bound: half a scale, plus the rounding of the product s * q to float (half an
        // ulp of |w'|, at most 2^-24 |w'|).
        const double err = std::fabs(static_cast<double>(w[i]) - back[k]);
        EXPECT_LE(err, scales[b] / 2.0 + std::ldexp(std::fabs(back[k]), -24)) << "weight " << k;
        worst = std::max(worst, err / scales[b]);
      }
    }
    // Random weights fill the whole range of rounding errors.
    EXPECT_GT(worst, 0.45) << "block " << block;
  }
}

TEST(Quantize, AbsmaxMapsTo127AndHalvesRoundAwayFromZero) {
  // absmax 127 gives scale 1 exactly, so q is w rounded to an integer.
  std::vector<float> W(32, 0.0f);
  W[0] = 127.0f;
  W[1] = -127.0f;
  W[2] = 2.5f;
  W[3] = -2.5f;
  W[4] = 0.49f;
  W[5] = -0.51f;
  W[6] = 126.5f;
  std::vector<std::int8_t> q(32);
  float scale = 0;
  quantize_q8(W.data(), 1, 32, 32, q.data(), &scale);
  EXPECT_EQ(scale, 1.0f);
  const std::int8_t expected[] = {127, -127, 3, -3, 0, -1, 127};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(q[static_cast<std::size_t>(i)], expected[i]) << i;
}

TEST(Quantize, ZeroBlockHasZeroScaleAndZeros) {
  std::vector<float> W(128, 0.0f);
  for (int i = 64; i < 128; ++i) W[static_cast<std::size_t>(i)] = static_cast<float>(i - 96);
  std::vector<std::int8_t> q(128, 5);
  std::vector<float> scales(2, -1.0f);
  quantize_q8(W.data(), 1, 128, 64, q.data(), scales.data());
  EXPECT_EQ(scales[0], 0.0f);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(q[static_cast<std::size_t>(i)], 0);
  EXPECT_EQ(scales[1], 32.0f / 127.0f);
  EXPECT_EQ(q[64], -127);
  std::vector<float> back(128, 7.0f);
  dequantize_q8(q.data(), scales.data(), 1, 128, 64, back.data());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(back[static_cast<std::size_t>(i)], 0.0f);
}

TEST(Quantize, RejectsBadBlocksAndShapes) {
  std::vector<float> W(96);
  std::vector<std::int8_t> q(96);
  std::vector<float> s(6);
  EXPECT_THROW(quantize_q8(W.data(), 1, 96, 16, q.data(), s.data()), Error);
  EXPECT_THROW(quantize_q8(W.data(), 1, 96, 64, q.data(), s.data()), Error);  // 96 % 64
  EXPECT_THROW(quantize_q8(W.data(), -1, 64, 64, q.data(), s.data()), Error);
  EXPECT_THROW(dequantize_q8(q.data(), s.data(), 1, 40, 32, W.data()), Error);
  EXPECT_NO_THROW(quantize_q8(W.data(), 0, 0, 32, q.data(), s.data()));
}

}  // namespace
}  // namespace orion::exec::cpu
