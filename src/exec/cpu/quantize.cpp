#include "exec/cpu/quantize.h"

#include <string>

#include "core/absmax_int8.h"
#include "core/error.h"

namespace orion::exec::cpu {

namespace {

void check(const char* what, std::int64_t rows, std::int64_t cols, int block) {
  if (block != 32 && block != 64)
    throw Error(std::string(what) + ": block " + std::to_string(block) + " (must be 32 or 64)");
  if (rows < 0 || cols < 0)
    throw Error(std::string(what) + ": negative size [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "]");
  if (cols % block != 0)
    throw Error(std::string(what) + ": cols " + std::to_string(cols) +
                " is not a multiple of the block " + std::to_string(block));
}

}  // namespace

void quantize_q8(const float* W, std::int64_t rows, std::int64_t cols, int block, std::int8_t* q,
                 float* scales) {
  check("quantize_q8", rows, cols, block);
  quantize_absmax_int8(W, rows, cols, block, q, scales);
}

void dequantize_q8(const std::int8_t* q, const float* scales, std::int64_t rows,
                   std::int64_t cols, int block, float* W) {
  check("dequantize_q8", rows, cols, block);
  dequantize_absmax_int8(q, scales, rows, cols, block, W);
}

}  // namespace orion::exec::cpu
