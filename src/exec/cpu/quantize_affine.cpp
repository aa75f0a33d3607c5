#include "exec/cpu/quantize_affine.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace orion::exec::cpu {

namespace {

void check(const char* what, std::int64_t rows, std::int64_t cols, AffineFormat f) {
  if (const std::string p = affine_format_problem(f); !p.empty()) throw Error(std::string(what) + ": " + p);
  if (rows < 0 || cols < 0)
    throw Error(std::string(what) + ": negative size [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (cols % f.group != 0)
    throw Error(std::string(what) + ": a row of " + std::to_string(cols) + " weights is not a whole number of groups of " +
                std::to_string(f.group));
}

// Field j of a row's bit stream: the two words it may span read as one 64-bit value.
std::uint32_t field(const std::uint32_t* row, std::int64_t j, int bits) {
  const std::int64_t bit = j * bits, word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  std::uint64_t v = row[word] >> shift;
  if (shift + bits > 32) v |= static_cast<std::uint64_t>(row[word + 1]) << (32 - shift);
  return static_cast<std::uint32_t>(v) & ((1u << bits) - 1u);
}

void set_field(std::uint32_t* row, std::int64_t j, int bits, std::uint32_t q) {
  const std::int64_t bit = j * bits, word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  row[word] |= q << shift;
  if (shift + bits > 32) row[word + 1] |= q >> (32 - shift);
}

}  // namespace

std::string affine_format_name(const AffineFormat& f) {
  return std::to_string(f.bits) + "-bit, groups of " + std::to_string(f.group);
}

std::string affine_format_problem(const AffineFormat& f) {
  if (f.bits < 2 || f.bits > 8 || f.bits == 7) return "bits " + std::to_string(f.bits) + " is not one of 2, 3, 4, 5, 6, 8";
  if (f.group != 32 && f.group != 64 && f.group != 128)
    return "group_size " + std::to_string(f.group) + " is not one of 32, 64, 128";
  return {};
}

void quantize_affine(const float* W, std::int64_t rows, std::int64_t cols, AffineFormat f, std::uint32_t* q,
                     float* scales, float* biases) {
  check("quantize_affine", rows, cols, f);
  const std::int64_t words = affine_row_words(cols, f.bits), groups = cols / f.group;
  const auto n_bins = static_cast<float>((1 << f.bits) - 1);
  std::fill(q, q + rows * words, 0u);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* w = W + r * cols + g * f.group;
      const auto [lo_it, hi_it] = std::minmax_element(w, w + f.group);
      const float lo = *lo_it, hi = *hi_it;
      const bool low_edge = std::fabs(lo) > std::fabs(hi);
      float s = std::max((hi - lo) / n_bins, 1e-7f);
      if (!low_edge) s = -s;
      const float edge = low_edge ? lo : hi;
      const float q0 = std::nearbyint(edge / s);
      float b = 0.0f;
      if (q0 != 0.0f) {
        s = edge / q0;
        b = edge;
      }
      scales[r * groups + g] = s;
      biases[r * groups + g] = b;
      for (int i = 0; i < f.group; ++i) {
        const float v = std::clamp(std::nearbyint((w[i] - b) / s), 0.0f, n_bins);
        set_field(q + r * words, g * f.group + i, f.bits, static_cast<std::uint32_t>(v));
      }
    }
  }
}

void dequantize_affine(const std::uint32_t* q, const float* scales, const float* biases, std::int64_t rows,
                       std::int64_t cols, AffineFormat f, float* W) {
  check("dequantize_affine", rows, cols, f);
  const std::int64_t words = affine_row_words(cols, f.bits), groups = cols / f.group;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t g = r * groups + c / f.group;
      W[r * cols + c] = std::fma(scales[g], static_cast<float>(field(q + r * words, c, f.bits)), biases[g]);
    }
}

}  // namespace orion::exec::cpu
