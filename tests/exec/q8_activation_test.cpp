// quantize_activation: the documented per-block scales, round-half-even int8 values within
// half a scale of x, zero padding, and the per-lane scale and offset the kernels read.
#include "exec/cpu/q8_activation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/random.h"

namespace orion::exec::cpu {
namespace {

TEST(Q8Activation, ValuesWithinHalfAScaleAndLanesConsistent) {
  QuantizedActivation qa;
  for (int block : {32, 64})
    for (std::int64_t cols : {std::int64_t{block}, std::int64_t{3 * block}, std::int64_t{768}, std::int64_t{3072 + block}}) {
      std::vector<float> x(static_cast<std::size_t>(cols));
      Rng rng(static_cast<std::uint64_t>(cols + block));
      for (float& v : x) v = rng.normal() * 3.0f;
      quantize_activation(x.data(), cols, block, qa);
      ASSERT_EQ(qa.cols, cols);
      ASSERT_EQ(qa.padded % kQ8Chunk, 0);
      ASSERT_GE(qa.padded, cols);
      ASSERT_LT(qa.padded - cols, kQ8Chunk);
      for (std::int64_t b = 0; b < cols / block; ++b) {
        float absmax = 0;
        for (int i = 0; i < block; ++i) absmax = std::max(absmax, std::fabs(x[static_cast<std::size_t>(b * block + i)]));
        const float s = qa.block_scale[static_cast<std::size_t>(b)];
        ASSERT_EQ(s, absmax / 127.0f);
        int largest = 0;
        for (int i = 0; i < block; ++i) {
          const auto c = static_cast<std::size_t>(b * block + i);
          const int q = qa.q[c];
          ASSERT_GE(q, -127);
          ASSERT_LE(q, 127);
          largest = std::max(largest, std::abs(q));
          // Round to nearest of x * (127 / absmax), computed as the code states it.
          const float v = x[c] * (127.0f / absmax);
          ASSERT_EQ(q, static_cast<int>(std::nearbyint(v))) << "column " << c;
          ASSERT_LE(std::fabs(x[c] - s * static_cast<float>(q)), 0.5f * s * (1 + 1e-5f)) << "column " << c;
        }
        EXPECT_EQ(largest, 127) << "block " << b;  // the absmax element maps to +-127
      }
      for (std::int64_t c = cols; c < qa.padded; ++c) ASSERT_EQ(qa.q[static_cast<std::size_t>(c)], 0);
      for (std::int64_t g = 0; g < qa.padded / kQ8LaneColumns; ++g) {
        const std::int64_t c = g * kQ8LaneColumns;
        int sum = 0;
        for (int i = 0; i < kQ8LaneColumns; ++i) sum += qa.q[static_cast<std::size_t>(c + i)];
        ASSERT_EQ(qa.lane_offset[static_cast<std::size_t>(g)], -128 * sum);
        ASSERT_EQ(qa.lane_scale[static_cast<std::size_t>(g)], c < cols ? qa.block_scale[static_cast<std::size_t>(c / block)] : 0.0f);
      }
    }
}

TEST(Q8Activation, HalvesRoundToEvenAndZeroBlocksStayZero) {
  // absmax 127: x * (127 / 127) = x exactly, so the halves are seen as they are.
  std::vector<float> x(64, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  x[4] = -0.5f;
  QuantizedActivation qa;
  quantize_activation(x.data(), 64, 32, qa);
  EXPECT_EQ(qa.q[0], 127);
  EXPECT_EQ(qa.q[1], 2);
  EXPECT_EQ(qa.q[2], -2);
  EXPECT_EQ(qa.q[3], 4);
  EXPECT_EQ(qa.q[4], 0);
  EXPECT_EQ(qa.block_scale[0], 1.0f);
  EXPECT_EQ(qa.block_scale[1], 0.0f);  // the second block is all zeros
  for (int c = 32; c < 64; ++c) EXPECT_EQ(qa.q[static_cast<std::size_t>(c)], 0);
}

}  // namespace
}  // namespace orion::exec::cpu
