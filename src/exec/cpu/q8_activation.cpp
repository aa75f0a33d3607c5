#include "exec/cpu/q8_activation.h"

#include <algorithm>
#include <cmath>

namespace orion::exec::cpu {

namespace {

// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer,
// halves to even (in the default rounding mode), with plain additions that vectorise.
constexpr float kRoundMagic = 12582912.0f;

inline float round_even(float v) {
  const float r = v + kRoundMagic;
  return r - kRoundMagic;
}

}  // namespace

void quantize_activation(const float* x, std::int64_t cols, int block, QuantizedActivation& out) {
  const std::int64_t padded = (cols + kQ8Chunk - 1) / kQ8Chunk * kQ8Chunk;
  const auto n = static_cast<std::size_t>(padded);
  if (out.q.size() < n) {
    out.q.resize(n);
    out.lane_scale.resize(n / kQ8LaneColumns);
    out.lane_offset.resize(n / kQ8LaneColumns);
  }
  out.block_scale.resize(static_cast<std::size_t>(cols / block));
  out.cols = cols;
  out.padded = padded;
  out.block = block;
  std::int8_t* q = out.q.data();
  for (std::int64_t b = 0; b < cols / block; ++b) {
    const float* xb = x + b * block;
    float absmax = 0.0f;
    for (int i = 0; i < block; ++i) absmax = std::max(absmax, std::fabs(xb[i]));
    const float inv = absmax > 0.0f ? 127.0f / absmax : 0.0f;
    out.block_scale[static_cast<std::size_t>(b)] = absmax / 127.0f;
    for (int i = 0; i < block; ++i) {
      float v = round_even(xb[i] * inv);
      v = v >= -127.0f ? v : -127.0f;  // NaN too
      v = v <= 127.0f ? v : 127.0f;
      q[b * block + i] = static_cast<std::int8_t>(static_cast<std::int32_t>(v));
    }
  }
  std::fill(q + cols, q + padded, std::int8_t{0});
  for (std::int64_t g = 0; g < padded / kQ8LaneColumns; ++g) {
    const std::int64_t c = g * kQ8LaneColumns;
    const std::int32_t sum = q[c] + q[c + 1] + q[c + 2] + q[c + 3];
    out.lane_offset[static_cast<std::size_t>(g)] = -128 * sum;
    out.lane_scale[static_cast<std::size_t>(g)] = c < cols ? out.block_scale[static_cast<std::size_t>(c / block)] : 0.0f;
  }
}

}  // namespace orion::exec::cpu
