#pragma once
// MLX's affine quantisation ("affine" mode of mlx.core.quantize, mlx/ops.cpp), the format of
// mlx-lm's quantized folders and of `orion convert --dtype q4`.
//
// Each row of W [rows, cols] is cut into groups of `group` (32, 64 or 128) consecutive weights;
// group g of row r has a scale s and a bias b, and weight c becomes q in [0, 2^bits - 1] with
// w' = s * q + b. The quantiser, as MLX's, makes the group's end of larger magnitude exact:
//   lo, hi = min, max of the group;  n = 2^bits - 1
//   s = max((hi - lo) / n, 1e-7), negated unless |lo| > |hi|;  e = lo if |lo| > |hi| else hi
//   q0 = round(e / s);  s = e / q0 and b = e when q0 != 0, else b = 0
//   q = clamp(round((w - b) / s), 0, n)
// in f32 arithmetic, rounding halves to even (so numpy following the same steps gets the same
// bits). The q of a row are a stream of `bits`-bit fields packed into uint32 words from the
// lowest bit up, field j at bit j * bits of the row's stream (for 2, 4 and 8 bits no field
// crosses a word; for 3, 5 and 6 some do). A row of `cols` weights is cols * bits / 32 words.
#include <cstdint>
#include <string>

namespace orion::exec::cpu {

struct AffineFormat {
  int bits = 4;    // 2, 3, 4, 5, 6 or 8
  int group = 64;  // 32, 64 or 128
  bool operator==(const AffineFormat&) const = default;
};

// "4-bit, groups of 64": for messages.
std::string affine_format_name(const AffineFormat& f);
// Empty when `f` is one MLX defines, else what is wrong with it ("bits 7 is not one of 2, 3, 4,
// 5, 6, 8"); callers put it in an error that names their file.
std::string affine_format_problem(const AffineFormat& f);

// Words of one packed row; cols must be a multiple of the group.
inline std::int64_t affine_row_words(std::int64_t cols, int bits) { return cols * bits / 32; }

// q: rows * affine_row_words(cols) words; scales, biases: rows * (cols / group) floats. Throws
// orion::Error for a format affine_format_problem refuses, cols not a multiple of the group, or
// a negative size. The weights must be finite.
void quantize_affine(const float* W, std::int64_t rows, std::int64_t cols, AffineFormat f, std::uint32_t* q,
                     float* scales, float* biases);

// W[r, c] = fma(scale, q, bias) of its group: the inverse map, one rounding per weight.
void dequantize_affine(const std::uint32_t* q, const float* scales, const float* biases, std::int64_t rows,
                       std::int64_t cols, AffineFormat f, float* W);

}  // namespace orion::exec::cpu
