#include "exec/cpu/q4_activation.h"

#include <algorithm>
#include <cmath>

namespace orion::exec::cpu {

namespace {

// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer,
// halves to even (in the default rounding mode), with plain additions that vectorise
// (q8_activation.cpp does the same).
constexpr float kQ4RoundMagic = 12582912.0f;

}  // namespace

void quantize_q4_activation(const float* x, std::int64_t cols, int group, Q4Activation& out) {
  const std::int64_t padded = (cols + kQ4Chunk - 1) / kQ4Chunk * kQ4Chunk, groups = cols / group,
                     padded_groups = (groups + kQ4GroupPad - 1) / kQ4GroupPad * kQ4GroupPad;
  const auto n = static_cast<std::size_t>(padded);
  if (out.digits.size() < 2 * n) {
    out.digits.resize(2 * n);
    out.lane_unit.resize(n / kQ4LaneColumns);
  }
  if (out.group_sum.size() < static_cast<std::size_t>(padded_groups)) out.group_sum.resize(static_cast<std::size_t>(padded_groups));
  out.cols = cols;
  out.padded = padded;
  out.group = group;
  std::fill(out.group_sum.begin(), out.group_sum.begin() + padded_groups, 0.0f);
  std::int8_t* digits = out.digits.data();
  for (std::int64_t b = 0; b < cols / kQ4ActivationBlock; ++b) {
    const float* xb = x + b * kQ4ActivationBlock;
    float absmax = 0.0f;
    for (int i = 0; i < kQ4ActivationBlock; ++i) absmax = std::max(absmax, std::fabs(xb[i]));
    const float inv = absmax > 0.0f ? static_cast<float>(kQ4Limit) / absmax : 0.0f;
    const float unit = absmax / static_cast<float>(kQ4Limit);
    // Block b is a quarter of chunk b / 4: its 16 even and 16 odd columns start at 16 * (b % 4)
    // of their runs.
    std::int8_t* chunk = digits + b / 4 * kQ4ChunkBytes + 16 * (b % 4);
    for (int i = 0; i < kQ4ActivationBlock; ++i) {
      float v = (xb[i] * inv + kQ4RoundMagic) - kQ4RoundMagic;
      v = v >= -static_cast<float>(kQ4Limit) ? v : -static_cast<float>(kQ4Limit);  // NaN too
      v = v <= static_cast<float>(kQ4Limit) ? v : static_cast<float>(kQ4Limit);
      const auto value = static_cast<std::int32_t>(v);
      const std::int32_t hi = (value + 64) >> 7;  // floor((n + 64) / 128)
      const int at = (i % 2) * kQ4HighOdd + i / 2;
      chunk[at + kQ4HighEven] = static_cast<std::int8_t>(hi);
      chunk[at + kQ4LowEven] = static_cast<std::int8_t>(value - 128 * hi);
    }
    for (int l = 0; l < kQ4ActivationBlock / kQ4LaneColumns; ++l) {
      const float* xl = xb + l * kQ4LaneColumns;
      const auto lane = static_cast<std::size_t>(b * (kQ4ActivationBlock / kQ4LaneColumns) + l);
      out.lane_unit[lane] = unit;
      out.group_sum[lane * kQ4LaneColumns / static_cast<std::size_t>(group)] +=
          ((xl[0] + xl[1]) + (xl[2] + xl[3])) + ((xl[4] + xl[5]) + (xl[6] + xl[7]));
    }
  }
  // The padding: the last chunk's remaining blocks.
  for (std::int64_t b = cols / kQ4ActivationBlock; b < padded / kQ4ActivationBlock; ++b) {
    std::int8_t* chunk = digits + b / 4 * kQ4ChunkBytes + 16 * (b % 4);
    for (int run = 0; run < 4; ++run) std::fill(chunk + 64 * run, chunk + 64 * run + 16, std::int8_t{0});
  }
  std::fill(out.lane_unit.begin() + cols / kQ4LaneColumns, out.lane_unit.begin() + padded / kQ4LaneColumns, 0.0f);
}

}  // namespace orion::exec::cpu
