// gemv: run-time ISA choice, argument checks, the split of rows over the pool, and the portable
// scalar kernels (the batched forms are in gemv_columns.cpp). The AVX2 and AVX-512 kernels are in gemv_avx2.cpp and gemv_avx512.cpp, the
// NEON ones in gemv_neon.cpp.
#include "exec/cpu/gemv.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "core/cpu_features.h"
#include "core/error.h"

namespace orion::exec::cpu {

namespace detail {

namespace {

// Portable kernels, written so that compilers vectorise them with the baseline ISA. Each row
// keeps four partial sums (one per column residue mod 4) so that the additions are not one
// long dependency chain; R rows at a time share every load of x.

// IEEE half -> float, exact (the scalar reference in core/half.cpp lives in another
// translation unit and is not inlined). Masks rather than branches, so that compilers can
// vectorise it.
inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t em = h & 0x7fffu;
  // Normal: rebias the exponent (127 - 15 = 112). Inf/NaN: all-ones exponent, payload kept.
  const std::uint32_t special = 0u - static_cast<std::uint32_t>(em >= 0x7c00u);
  const std::uint32_t normal =
      (((em << 13) + 0x38000000u) & ~special) | (((em << 13) | 0x7f800000u) & special);
  // Zero and subnormal: mantissa * 2^-24, exact (an integer below 2^10 times a power of two).
  const std::uint32_t tiny = 0u - static_cast<std::uint32_t>(em < 0x400u);
  const std::uint32_t small =
      std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int32_t>(em)) * 0x1p-24f);
  return std::bit_cast<float>((small & tiny) | (normal & ~tiny) | sign);
}

template <int R>
void f32_group(const float* W, std::int64_t ld, const float* x, std::int64_t cols, float* out) {
  float acc[R][4] = {};
  std::int64_t c = 0;
  for (; c + 4 <= cols; c += 4)
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) acc[r][k] += W[r * ld + c + k] * x[c + k];
  for (; c < cols; ++c)
    for (int r = 0; r < R; ++r) acc[r][0] += W[r * ld + c] * x[c];
  for (int r = 0; r < R; ++r) out[r] = (acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]);
}

// f16 and q8 weights are first converted to floats a strip of columns at a time, in loops of
// their own that compilers vectorise, then multiplied as f32.
constexpr std::int64_t kStrip = 64;  // a multiple of 4

template <int R>
void f16_group(const std::uint16_t* W, std::int64_t ld, const float* x, std::int64_t cols,
               float* out) {
  float acc[R][4] = {};
  float w[R][kStrip];
  for (std::int64_t c0 = 0; c0 < cols; c0 += kStrip) {
    const std::int64_t n = std::min(kStrip, cols - c0);
    for (int r = 0; r < R; ++r)
      for (std::int64_t i = 0; i < n; ++i) w[r][i] = half_bits_to_float(W[r * ld + c0 + i]);
    const float* xs = x + c0;
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int r = 0; r < R; ++r)
        for (int k = 0; k < 4; ++k) acc[r][k] += w[r][i + k] * xs[i + k];
    for (; i < n; ++i)
      for (int r = 0; r < R; ++r) acc[r][0] += w[r][i] * xs[i];
  }
  for (int r = 0; r < R; ++r) out[r] = (acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]);
}

void f32_rows(const float* W, const float* x, const float* bias, float* y, std::int64_t r0,
              std::int64_t r1, std::int64_t cols) {
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) { f32_group<1>(W + r * cols, cols, x, cols, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) {
        f32_group<4>(W + r * cols, stride * cols, x, cols, s);
      });
}

void f16_rows(const std::uint16_t* W, const float* x, const float* bias, float* y,
              std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) { f16_group<1>(W + r * cols, cols, x, cols, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) {
        f16_group<4>(W + r * cols, stride * cols, x, cols, s);
      });
}

}  // namespace

const RowKernels kScalarKernels = {f32_rows, f16_rows, nullptr, nullptr};

}  // namespace detail

namespace {

bool supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::scalar:
      return true;
#if defined(__x86_64__)
    case Isa::avx2:
      return f.avx2 && f.fma && f.f16c;
    case Isa::avx512:
      return f.avx512f && f.avx512bw && f.avx512vl && f.fma && f.f16c;
    case Isa::neon:
      return false;
#elif defined(__aarch64__)
    case Isa::avx2:
    case Isa::avx512:
      return false;
    case Isa::neon:
      return f.neon;
#else
    case Isa::avx2:
    case Isa::avx512:
    case Isa::neon:
      (void)f;
      return false;
#endif
  }
  return false;
}

}  // namespace

namespace detail {

namespace {
// Rows per chunk boundary: 16 floats are one 64-byte cache line of y.
constexpr std::int64_t kRowsPerLine = 16;
}  // namespace

void check_isa(Isa isa, const char* what) {
  if (!isa_supported(isa))
    throw Error(std::string(what) + ": this CPU cannot run the " + std::string(isa_name(isa)) +
                " path");
}

void check_sizes(const char* what, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0)
    throw Error(std::string(what) + ": negative size [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "]");
}

// The pool makes a few chunks per thread and hands them out as threads come free.
void for_rows(std::int64_t rows, std::int64_t cols, const float* y, ThreadPool& pool,
              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (rows == 0) return;
  if (pool.size() == 1 || rows * cols < kInlineElements) {
    fn(std::int64_t{0}, rows);
    return;
  }
  // Row r lives in "line" (r + shift) / 16: line boundaries are the 64-byte boundaries of y.
  const auto shift =
      static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(y) / sizeof(float)) %
                                kRowsPerLine);
  const std::int64_t lines = (rows + shift + kRowsPerLine - 1) / kRowsPerLine;
  pool.parallel_for(0, lines, 1, [&](std::int64_t lo, std::int64_t hi) {
    const std::int64_t r0 = std::max<std::int64_t>(lo * kRowsPerLine - shift, 0);
    const std::int64_t r1 = std::min<std::int64_t>(hi * kRowsPerLine - shift, rows);
    if (r0 < r1) fn(r0, r1);
  });
}

void fill_bias(const float* bias, float* y, std::int64_t rows, Activation act) {
  for (std::int64_t r = 0; r < rows; ++r) y[r] = bias ? bias[r] : 0.0f;
  apply_activation(act, y, rows);
}

}  // namespace detail

namespace detail {

const RowKernels& row_kernels(Isa isa, const char* what) {
  check_isa(isa, what);
  switch (isa) {
#if defined(__x86_64__)
    case Isa::avx512:
      return kAvx512Kernels;
    case Isa::avx2:
      return kAvx2Kernels;
#elif defined(__aarch64__)
    case Isa::neon:
      return kNeonKernels;
#endif
    default:
      return kScalarKernels;
  }
}

}  // namespace detail

Isa best_isa() {
  static const Isa isa = supported(Isa::avx512) ? Isa::avx512
                         : supported(Isa::avx2) ? Isa::avx2
                         : supported(Isa::neon) ? Isa::neon
                                                : Isa::scalar;
  return isa;
}

bool isa_supported(Isa isa) { return supported(isa); }

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::neon:
      return "neon";
  }
  return "unknown";
}

void gemv_f32(const float* W, const float* x, const float* bias, float* y, std::int64_t rows,
              std::int64_t cols, ThreadPool& pool, Isa isa, Activation act) {
  detail::check_sizes("gemv_f32", rows, cols);
  const detail::RowKernels& k = detail::row_kernels(isa, "gemv_f32");
  if (cols == 0) return detail::fill_bias(bias, y, rows, act);
  detail::for_rows(rows, cols, y, pool, [&](std::int64_t r0, std::int64_t r1) {
    k.f32(W, x, bias, y, r0, r1, cols);
    apply_activation(act, y + r0, r1 - r0);
  });
}

void gemv_f16(const std::uint16_t* W, const float* x, const float* bias, float* y,
              std::int64_t rows, std::int64_t cols, ThreadPool& pool, Isa isa,
              Activation act) {
  detail::check_sizes("gemv_f16", rows, cols);
  const detail::RowKernels& k = detail::row_kernels(isa, "gemv_f16");
  if (cols == 0) return detail::fill_bias(bias, y, rows, act);
  detail::for_rows(rows, cols, y, pool, [&](std::int64_t r0, std::int64_t r1) {
    k.f16(W, x, bias, y, r0, r1, cols);
    apply_activation(act, y + r0, r1 - r0);
  });
}

}  // namespace orion::exec::cpu
