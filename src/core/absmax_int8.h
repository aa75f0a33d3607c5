#pragma once
// Block-wise absmax int8 quantisation of row-major weights: the one rule both int8 formats use,
// the CPU engine's q8 (exec/cpu/quantize.h, blocks of 32 or 64) and the ANE's int8 weights
// (compile/passes/quantize_weights.h, blocks of any size dividing the row, a whole row for one
// scale per output channel).
//
// Each row of W [rows, cols] is cut into blocks of `block` consecutive weights; block b of row
// r gets one float scale s = absmax / 127 (absmax: the largest |w| in the block), stored at
// scales[r * (cols / block) + b], and each weight becomes q = round(w / s) in [-127, 127]
// (halves away from zero; -128 is never used, so the range is symmetric). A block of zeros gets
// s = 0 and q = 0. Dequantised, w' = s * q, and for finite weights |w - w'| <= s / 2 per
// element, up to the f32 rounding of the product s * q. The weights must be finite.
#include <cstdint>

namespace orion {

// q: rows * cols int8; scales: rows * (cols / block) floats. Throws orion::Error when block is
// not positive, cols is not a multiple of it, or a size is negative.
void quantize_absmax_int8(const float* W, std::int64_t rows, std::int64_t cols, std::int64_t block, std::int8_t* q,
                          float* scales);

// The inverse map: W[r, c] = scales[r, c / block] * q[r, c]. Same checks.
void dequantize_absmax_int8(const std::int8_t* q, const float* scales, std::int64_t rows, std::int64_t cols,
                            std::int64_t block, float* W);

}  // namespace orion
