// f32 and f16 gemv kernels for arm64's Advanced SIMD (4 floats per register, 32 registers),
// which every AArch64 core has; q8 is in gemv_q8_neon*.cpp. Chosen at run time; nothing here
// runs unless isa_supported(Isa::neon).
//
// Four rows at a time (in the order of detail::for_row_groups) share each load of x; every
// row keeps four accumulators (sixteen independent FMA chains for a group: enough for four
// FMA pipes of latency four). f16 weights go through FCVTL (vcvt_f32_f16), the baseline
// conversion, which is exact. The odd cols % 4 columns go through a zeroed copy, so no byte
// outside W, x or y is touched.
//
// No head is peeled off to align the loads, as the x86 kernels do: no arm64 hardware has
// measured whether it pays here (docs/PLATFORMS.md), and without it a row's arithmetic depends
// on cols alone.
#include "exec/cpu/gemv.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace orion::exec::cpu::detail {

namespace {

// n (1..3) elements of a row or of x, zero-padded to a register: 0 * 0 adds nothing.
inline float32x4_t load_f32_tail(const float* p, std::int64_t n) {
  float buf[4] = {};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(float));
  return vld1q_f32(buf);
}

inline float32x4_t load_half4(const std::uint16_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

inline float32x4_t load_half_tail(const std::uint16_t* p, std::int64_t n) {
  std::uint16_t buf[4] = {};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
  return load_half4(buf);
}

// The row's sum: its four accumulators in a fixed order, then the lanes (FADDP twice).
inline float row_sum(const float32x4_t* acc) {
  return vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
}

// R rows' dot products with x, W read through `load` (F32Loads, F16Loads). The first
// cols % 16 columns go first, each part into a fixed accumulator (cols % 4 of them through a
// zeroed copy into acc[3], then a step of 4 into acc[2], then one of 8 into acc[0] and acc[1]),
// then steps of 16 to the end of the row, columns [c + 4k, c + 4k + 4) into acc[k]: which
// accumulator a column feeds depends only on cols. The odd columns come first so that nothing
// follows the main loop: with code after it, GCC 12 stores every accumulator to the stack on
// each of its iterations.
template <int R, class Load>
inline void dot_group(const Load& load, std::int64_t ld, const float* x, std::int64_t cols,
                      float* out) {
  float32x4_t acc[R][4];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = vdupq_n_f32(0.0f);
  const std::int64_t t = cols % 16;
  std::int64_t c = 0;
  if (t % 4 != 0) {
    const std::int64_t n = t % 4;
    const float32x4_t x0 = load_f32_tail(x, n);
    for (int r = 0; r < R; ++r) acc[r][3] = vfmaq_f32(acc[r][3], load.tail(r * ld, n), x0);
    c = n;
  }
  if (t & 4) {
    const float32x4_t x0 = vld1q_f32(x + c);
    for (int r = 0; r < R; ++r) acc[r][2] = vfmaq_f32(acc[r][2], load.four(r * ld + c), x0);
    c += 4;
  }
  if (t & 8) {
    const float32x4_t x0 = vld1q_f32(x + c), x1 = vld1q_f32(x + c + 4);
    for (int r = 0; r < R; ++r) {
      acc[r][0] = vfmaq_f32(acc[r][0], load.four(r * ld + c), x0);
      acc[r][1] = vfmaq_f32(acc[r][1], load.four(r * ld + c + 4), x1);
    }
    c += 8;
  }
  for (; c < cols; c += 16) {
    const float32x4_t x0 = vld1q_f32(x + c), x1 = vld1q_f32(x + c + 4);
    const float32x4_t x2 = vld1q_f32(x + c + 8), x3 = vld1q_f32(x + c + 12);
    for (int r = 0; r < R; ++r) {
      float32x4_t w[4];
      load.sixteen(r * ld + c, w);
      acc[r][0] = vfmaq_f32(acc[r][0], w[0], x0);
      acc[r][1] = vfmaq_f32(acc[r][1], w[1], x1);
      acc[r][2] = vfmaq_f32(acc[r][2], w[2], x2);
      acc[r][3] = vfmaq_f32(acc[r][3], w[3], x3);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = row_sum(acc[r]);
}

// W's elements at an offset from the group's first row, as floats.
struct F32Loads {
  const float* W;
  float32x4_t tail(std::int64_t i, std::int64_t n) const { return load_f32_tail(W + i, n); }
  float32x4_t four(std::int64_t i) const { return vld1q_f32(W + i); }
  void sixteen(std::int64_t i, float32x4_t* w) const {
    for (int k = 0; k < 4; ++k) w[k] = vld1q_f32(W + i + 4 * k);
  }
};

// Halves converted by FCVTL: 8 at a time into two registers of 4 floats.
struct F16Loads {
  const std::uint16_t* W;
  float32x4_t tail(std::int64_t i, std::int64_t n) const { return load_half_tail(W + i, n); }
  float32x4_t four(std::int64_t i) const { return load_half4(W + i); }
  void sixteen(std::int64_t i, float32x4_t* w) const {
    const float16x8_t h0 = vreinterpretq_f16_u16(vld1q_u16(W + i));
    const float16x8_t h1 = vreinterpretq_f16_u16(vld1q_u16(W + i + 8));
    w[0] = vcvt_f32_f16(vget_low_f16(h0));
    w[1] = vcvt_high_f32_f16(h0);
    w[2] = vcvt_f32_f16(vget_low_f16(h1));
    w[3] = vcvt_high_f32_f16(h1);
  }
};

void f32_rows(const float* W, const float* x, const float* bias, float* y, std::int64_t r0,
              std::int64_t r1, std::int64_t cols) {
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) { dot_group<1>(F32Loads{W + r * cols}, cols, x, cols, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) {
        dot_group<4>(F32Loads{W + r * cols}, stride * cols, x, cols, s);
      });
}

void f16_rows(const std::uint16_t* W, const float* x, const float* bias, float* y,
              std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) { dot_group<1>(F16Loads{W + r * cols}, cols, x, cols, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) {
        dot_group<4>(F16Loads{W + r * cols}, stride * cols, x, cols, s);
      });
}

}  // namespace

const RowKernels kNeonKernels = {f32_rows, f16_rows};

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
