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

#define ORION_PASSES_TARGET
#include "exec/cpu/gemv_passes.h"

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

// One 4-column step of the batched form: acc[r][v] += W[r, i..i+4) x_v[i..i+4), or with Tail
// the first n (1..3) columns through zeroed copies (dot_group's tail).
template <int R, int V, bool Tail, class Load>
inline void vector_step(float32x4_t (&acc)[R][V], const Load& load, std::int64_t ld, const float* const* xs,
                        std::int64_t c, std::int64_t n) {
  float32x4_t xv[V];
  for (int v = 0; v < V; ++v) xv[v] = Tail ? load_f32_tail(xs[v] + c, n) : vld1q_f32(xs[v] + c);
  for (int r = 0; r < R; ++r) {
    const float32x4_t w = Tail ? load.tail(r * ld + c, n) : load.four(r * ld + c);
    for (int v = 0; v < V; ++v) acc[r][v] = vfmaq_f32(acc[r][v], w, xv[v]);
  }
}

// Accumulator U of dot_group for R rows and V vectors: every step dot_group feeds into its
// accumulator U, in the same order, into acc[r][v] for each (row, vector) pair.
template <int R, int V, int U, class Load>
inline void vector_pass(float32x4_t (&acc)[R][V], const Load& load, std::int64_t ld, const float* const* xs,
                        std::int64_t cols) {
  const std::int64_t t = cols % 16;
  std::int64_t c = 0;
  if (t % 4 != 0) {
    if (U == 3) vector_step<R, V, true>(acc, load, ld, xs, 0, t % 4);
    c = t % 4;
  }
  if (t & 4) {
    if (U == 2) vector_step<R, V, false>(acc, load, ld, xs, c, 4);
    c += 4;
  }
  if (t & 8) {
    if (U < 2) vector_step<R, V, false>(acc, load, ld, xs, c + 4 * U, 4);
    c += 8;
  }
  for (; c < cols; c += 16) vector_step<R, V, false>(acc, load, ld, xs, c + 4 * U, 4);
}

// dot_group<R> for V vectors: out[r * V + v], each (r, v) with exactly dot_group's arithmetic,
// each load of a row's weights serving the V vectors. The four accumulators go one after the
// other, each a pass over the R rows (in L1 for the later ones), so that the pairs'
// accumulators fit in the registers with x and the weights.
template <int R, int V, class Load>
inline void vector_block(const Load& load, std::int64_t ld, const float* const* xs, std::int64_t cols, float* out) {
  float32x4_t part[4][R][V];
  accumulator_passes(part, vdupq_n_f32(0.0f),
                     [&](auto u, float32x4_t(&acc)[R][V]) { vector_pass<R, V, decltype(u)::value>(acc, load, ld, xs, cols); });
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      const float32x4_t a[4] = {part[0][r][v], part[1][r][v], part[2][r][v], part[3][r][v]};
      out[r * V + v] = row_sum(a);
    }
}

// Four rows (for_row_groups' order) of V vectors a pass: 4 + V loads for 4 * V multiply-adds,
// 4 * V + V + 1 of the 32 registers.
template <int V, class Weight, class Loads>
void rows_for_vectors(const Weight* W, const float* const* xs, const float* bias, float* const* y, std::int64_t r0,
                      std::int64_t r1, std::int64_t cols) {
  for_vector_rows<4, V>(
      r0, r1, bias, y, [&](std::int64_t r, float* s) { vector_block<1, V>(Loads{W + r * cols}, cols, xs, cols, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) {
        vector_block<4, V>(Loads{W + r * cols}, stride * cols, xs, cols, s);
      });
}

template <class Weight, class Loads>
void dense_vectors(const Weight* W, const float* const* x, int n, const float* bias, float* const* y, std::int64_t r0,
                   std::int64_t r1, std::int64_t cols) {
  with_vector_count(n, [&](auto v) { rows_for_vectors<decltype(v)::value, Weight, Loads>(W, x, bias, y, r0, r1, cols); });
}

}  // namespace

const RowKernels kNeonKernels = {f32_rows, f16_rows, dense_vectors<float, F32Loads>,
                                 dense_vectors<std::uint16_t, F16Loads>};

}  // namespace orion::exec::cpu::detail

#endif  // __aarch64__
