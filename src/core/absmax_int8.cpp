#include "core/absmax_int8.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace orion {

namespace {

void check(const char* what, std::int64_t rows, std::int64_t cols, std::int64_t block) {
  if (block <= 0) throw Error(std::string(what) + ": block " + std::to_string(block) + " is not positive");
  if (rows < 0 || cols < 0)
    throw Error(std::string(what) + ": negative size [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (cols % block != 0)
    throw Error(std::string(what) + ": cols " + std::to_string(cols) + " is not a multiple of the block " +
                std::to_string(block));
}

}  // namespace

void quantize_absmax_int8(const float* W, std::int64_t rows, std::int64_t cols, std::int64_t block, std::int8_t* q,
                          float* scales) {
  check("quantize_absmax_int8", rows, cols, block);
  const std::int64_t blocks = rows * (cols / block);
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float* w = W + b * block;
    std::int8_t* out = q + b * block;
    float absmax = 0.0f;
    for (std::int64_t i = 0; i < block; ++i) absmax = std::max(absmax, std::fabs(w[i]));
    const float scale = absmax / 127.0f;
    scales[b] = scale;
    if (scale == 0.0f) {  // all zeros (or all below the smallest float times 127)
      std::fill(out, out + block, std::int8_t{0});
      continue;
    }
    // Divide in double: w / scale is then exact to far below the spacing of the halves, so
    // round() picks the nearest q.
    for (std::int64_t i = 0; i < block; ++i) {
      const double v = std::round(static_cast<double>(w[i]) / static_cast<double>(scale));
      out[i] = static_cast<std::int8_t>(std::clamp(v, -127.0, 127.0));
    }
  }
}

void dequantize_absmax_int8(const std::int8_t* q, const float* scales, std::int64_t rows, std::int64_t cols,
                            std::int64_t block, float* W) {
  check("dequantize_absmax_int8", rows, cols, block);
  const std::int64_t blocks = rows * (cols / block);
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float s = scales[b];
    for (std::int64_t i = 0; i < block; ++i) W[b * block + i] = s * static_cast<float>(q[b * block + i]);
  }
}

}  // namespace orion
