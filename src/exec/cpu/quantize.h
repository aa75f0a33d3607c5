#pragma once
// Block-wise absmax int8 quantisation of row-major weights, the format gemv_q8 reads: the rule
// of core/absmax_int8.h with blocks of 32 or 64.
//
// Each row of W [rows, cols] is cut into blocks of `block` (32 or 64) consecutive weights;
// block b of row r gets one float scale s = absmax / 127 (absmax: the largest |w| in the
// block), stored at scales[r * (cols / block) + b], and each weight becomes
// q = round(w / s) in [-127, 127] (halves away from zero; -128 is never used, so the range is
// symmetric). A block of zeros gets s = 0 and q = 0. Dequantised, w' = s * q, and for finite
// weights |w - w'| <= s / 2 per element, up to the f32 rounding of the product s * q (half an
// ulp of |w'|). The weights must be finite.
#include <cstdint>

namespace orion::exec::cpu {

// q: rows * cols int8; scales: rows * (cols / block) floats. Throws orion::Error when block is
// not 32 or 64, cols is not a multiple of block, or a size is negative.
void quantize_q8(const float* W, std::int64_t rows, std::int64_t cols, int block, std::int8_t* q,
                 float* scales);

// The inverse map: W[r, c] = scales[r, c / block] * q[r, c]. Same checks as quantize_q8.
void dequantize_q8(const std::int8_t* q, const float* scales, std::int64_t rows,
                   std::int64_t cols, int block, float* W);

}  // namespace orion::exec::cpu
