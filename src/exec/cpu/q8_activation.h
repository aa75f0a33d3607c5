#pragma once
// The activation side of the int8 GEMV (gemv_q8): x quantised once per product, per block of
// the weights' block size, so that every row's dot products run on int8 x int8 with exact
// int32 sums (vpdpbusd and its AVX2 equivalents).
//
// Block b of x (columns [b*block, (b+1)*block)) gets the scale s = absmax / 127 and each
// element q = round(x * (127 / absmax)), halves to even, clamped to [-127, 127]; a block of
// zeros gets s = 0 and q = 0. Then |x - s q| <= s / 2 up to the f32 rounding of the two
// scale computations. x must be finite (a NaN is quantised to -127 rather than to undefined
// behaviour, but the product is meaningless then).
//
// One portable implementation serves every ISA, so that all kernels see the same bits; it is
// written with the magic-number rounding trick rather than nearbyint so that compilers
// vectorise it with the baseline ISA (its share of a GEMV's time: docs/PERFORMANCE.md,
// "Smaller measurements behind the code").
#include <cstdint>
#include <vector>

namespace orion::exec::cpu {

// The kernels work on "lanes" of 4 consecutive columns (what one int32 lane of vpdpbusd sums).
inline constexpr int kQ8LaneColumns = 4;
// Columns are padded with zeros to a multiple of this (one 512-bit register of int8).
inline constexpr std::int64_t kQ8Chunk = 64;

struct QuantizedActivation {
  std::int64_t cols = 0;    // of x, a multiple of block
  std::int64_t padded = 0;  // cols rounded up to a multiple of kQ8Chunk
  int block = 0;
  std::vector<std::int8_t> q;             // [padded], zero beyond cols
  std::vector<float> block_scale;         // [cols / block]
  std::vector<float> lane_scale;          // [padded / 4]: the scale of the lane's block, 0 beyond cols
  std::vector<std::int32_t> lane_offset;  // [padded / 4]: -128 * (sum of the lane's 4 q)
};

// Fills `out` for x[0, cols) (block 32 or 64, cols % block == 0, checked by the caller).
// Allocates only when cols grows beyond what `out` held before.
void quantize_activation(const float* x, std::int64_t cols, int block, QuantizedActivation& out);

}  // namespace orion::exec::cpu
