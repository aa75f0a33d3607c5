#pragma once
// The activation side of the 4-bit GEMV (gemv_q4.h): x quantised once per product to 15-bit
// integers written as two int8 digits, so that every row's dot products run on unsigned 4-bit
// weights times signed bytes with exact int32 sums (vpdpbusd, vpmaddubsw, SDOT), plus the f32
// sums of x over the weights' groups, which their biases multiply.
//
// Block b of x (columns [32b, 32b + 32)) gets the unit u = absmax / 16256 and each element
// n = round(x * (16256 / absmax)), halves to even, clamped to [-16256, 16256] = 127 * 128 *
// [-1, 1]; a block of zeros gets u = 0 and n = 0. Then |x - u n| <= u / 2 up to the f32
// rounding of the scale computations. n is stored as hi = floor((n + 64) / 128) in [-127, 127]
// and lo = n - 128 hi in [-64, 63]. x must be finite (a NaN becomes -16256, and the product is
// meaningless then).
//
// The digits are laid out for the kernels, which take the weights' bytes as they are: the low
// nibbles of a row's bytes are its even columns, the high nibbles its odd ones. Each chunk of
// 128 columns (64 bytes of a row) holds 256 bytes: the high digits of its 64 even columns, of
// its 64 odd columns, then the low digits of the even and of the odd columns, each in column
// order (kQ4HighEven ... kQ4LowOdd). A register of a row's bytes starting at byte k of a chunk
// pairs with the digits starting at k in each of the four.
//
// Group k's sum (columns [k*group, (k+1)*group)) is the sum, in order, of its lanes' sums, a
// lane's 8 x added as ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)).
//
// One portable implementation serves every ISA, so that all kernels see the same bits.
#include <cstdint>
#include <vector>

namespace orion::exec::cpu {

// A lane: 8 consecutive columns, 4 bytes of a row (what one int32 lane of vpdpbusd sums over
// the low and the high nibbles).
inline constexpr int kQ4LaneColumns = 8;
// Columns are padded with zeros to a multiple of this (one 512-bit register of a row's bytes).
inline constexpr std::int64_t kQ4Chunk = 128;
// Columns per quantisation block of x, and the largest |n|.
inline constexpr int kQ4ActivationBlock = 32;
inline constexpr int kQ4Limit = 127 * 128;
// Offsets of the four digit runs within a chunk's 256 bytes.
inline constexpr int kQ4HighEven = 0, kQ4HighOdd = 64, kQ4LowEven = 128, kQ4LowOdd = 192;
inline constexpr int kQ4ChunkBytes = 256;

// Group sums are padded with zeros to a multiple of this (one 512-bit register of floats).
inline constexpr std::int64_t kQ4GroupPad = 16;

struct Q4Activation {
  std::int64_t cols = 0;    // of x, a multiple of group
  std::int64_t padded = 0;  // cols rounded up to a multiple of kQ4Chunk
  int group = 0;
  std::vector<std::int8_t> digits;  // [padded / 128][256], zero beyond cols
  std::vector<float> lane_unit;     // [padded / 8]: the unit u of the lane's block, 0 beyond cols
  std::vector<float> group_sum;     // [cols / group rounded up to 16]: each group's sum of x, 0 beyond

  // n of column c, from its two digits.
  std::int32_t value(std::int64_t c) const {
    const std::int8_t* chunk = digits.data() + c / kQ4Chunk * kQ4ChunkBytes + (c % 2) * kQ4HighOdd + c % kQ4Chunk / 2;
    return 128 * chunk[kQ4HighEven] + chunk[kQ4LowEven];
  }
};

// Fills `out` for x[0, cols) and the weights' group (32, 64 or 128; cols % group == 0, checked
// by the caller). Allocates only when cols grows beyond what `out` held before.
void quantize_q4_activation(const float* x, std::int64_t cols, int group, Q4Activation& out);

}  // namespace orion::exec::cpu
