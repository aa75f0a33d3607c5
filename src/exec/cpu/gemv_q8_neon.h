#pragma once
// The body of the arm64 q8 row kernels, shared by gemv_q8_neon.cpp and
// gemv_q8_neon_dotprod.cpp, which differ only in how they form the int32 lane sums. The
// including file defines ORION_Q8_TARGET (its target attribute, or nothing) and, before
// including this, a struct LaneDot with
//   int32x4_t operator()(int8x16_t w, int8x16_t xq) const;  // 4 exact int32 lane sums
// of q times xq, lane i summing bytes 4i to 4i + 3.
//
// A register holds 16 columns, 4 lanes: each 64 columns of a row are four registers, whose
// 16 lane sums go to the row's four registers of accumulators, lane l of the chunk into
// accumulator l (gemv.h, q8 numerics). Four rows (detail::for_row_groups) share each load of
// x. A row of a block 32 model may end half way through a chunk: its last 32 columns then
// update only accumulators 0-7. No reads past a row: columns are a multiple of 32. The batched
// form takes each row's registers once for several vectors.
#include <arm_neon.h>

#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q8_TARGET inline float reduce_lanes(float32x4_t a0, float32x4_t a1, float32x4_t a2,
                                          float32x4_t a3) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): the order gemv.h states.
  const float32x4_t v4 = vaddq_f32(vaddq_f32(a0, a2), vaddq_f32(a1, a3));
  const float32x2_t v2 = vadd_f32(vget_low_f32(v4), vget_high_f32(v4));
  return vget_lane_f32(v2, 0) + vget_lane_f32(v2, 1);
}

// The first J registers (16 columns each; J = 4 or 2) of the 64-column chunk k of R rows and NV
// vectors into their accumulators acc[r][v][0..J): t = float(L) * xs_b, then fma(t, ws_b, acc),
// as the scalar path. Registers go in pairs, 32 columns, which never straddle a block: every
// lane of a pair has the same xs_b, the activation's block scale (which is what lane_scale holds
// per lane). Each row's weights and scale are loaded once for the NV vectors.
template <int R, int NV, int B, int J>
ORION_Q8_TARGET inline void q8_chunk(const std::int8_t* q, const float* ws, std::int64_t cols,
                                     std::int64_t nb, std::int64_t stride, const std::int8_t* const* xq,
                                     const float* const* xscale, std::int64_t k, float32x4_t (*acc)[NV][4]) {
  const LaneDot dot;
  for (int p = 0; p < J; p += 2) {
    const std::int64_t c = 64 * k + 16 * p;
    int8x16_t x0[NV], x1[NV];
    float xs[NV];
    for (int v = 0; v < NV; ++v) {
      x0[v] = vld1q_s8(xq[v] + c);
      x1[v] = vld1q_s8(xq[v] + c + 16);
      xs[v] = xscale[v][c / B];
    }
    for (int r = 0; r < R; ++r) {
      const std::int8_t* row = q + r * stride * cols + c;
      const float scale = ws[r * stride * nb + c / B];
      const int8x16_t w0 = vld1q_s8(row), w1 = vld1q_s8(row + 16);
      for (int v = 0; v < NV; ++v) {
        const float32x4_t t0 = vmulq_n_f32(vcvtq_f32_s32(dot(w0, x0[v])), xs[v]);
        const float32x4_t t1 = vmulq_n_f32(vcvtq_f32_s32(dot(w1, x1[v])), xs[v]);
        acc[r][v][p] = vfmaq_n_f32(acc[r][v][p], t0, scale);
        acc[r][v][p + 1] = vfmaq_n_f32(acc[r][v][p + 1], t1, scale);
      }
    }
  }
}

// The R rows' sums over every whole 64-column chunk, then the last 32 columns when a block 32
// row ends half way through a chunk, for NV vectors: out[r * NV + v]. With WholeChunks (the
// caller knows there is at least one chunk and no half), the loop has no path around it and no
// chunk after it: with either, GCC 12 stores the sixteen accumulators of a four-row group to the
// stack on every iteration, as it does in the 256-bit x86 body (gemv_q8_avx2.h).
template <int R, int NV, int B, bool WholeChunks>
ORION_Q8_TARGET inline void q8_sums(const std::int8_t* q, const float* ws, std::int64_t cols,
                                    std::int64_t stride, const std::int8_t* const* xq, const float* const* xscale,
                                    float* out) {
  const std::int64_t nb = cols / B, chunks = cols / 64;
  float32x4_t acc[R][NV][4];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v][0] = acc[r][v][1] = acc[r][v][2] = acc[r][v][3] = vdupq_n_f32(0.0f);
  std::int64_t k = 0;
  if (WholeChunks || chunks > 0) {
    do {
      q8_chunk<R, NV, B, 4>(q, ws, cols, nb, stride, xq, xscale, k, acc);
    } while (++k < chunks);
  }
  if constexpr (!WholeChunks)
    if (cols % 64 != 0) q8_chunk<R, NV, B, 2>(q, ws, cols, nb, stride, xq, xscale, k, acc);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = reduce_lanes(acc[r][v][0], acc[r][v][1], acc[r][v][2], acc[r][v][3]);
}

// Rows that end half way through a chunk, or have no whole chunk: q8_group's rare case, kept out
// of line so that its paths stay out of the common loop.
template <int R, int NV, int B>
[[gnu::noinline]] ORION_Q8_TARGET void q8_group_any(const std::int8_t* q, const float* ws,
                                                    std::int64_t cols, std::int64_t stride,
                                                    const std::int8_t* const* xq, const float* const* xscale,
                                                    float* out) {
  q8_sums<R, NV, B, false>(q, ws, cols, stride, xq, xscale, out);
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v]. P (how far ahead to prefetch,
// gemv_q8_rows.h) is unused: nothing here prefetches, since no arm64 hardware has measured
// whether it pays.
template <int R, int NV, int B, int P>
ORION_Q8_TARGET inline void q8_group_vectors(const std::int8_t* q, const float* ws, std::int64_t cols,
                                             std::int64_t stride, const QuantizedActivation* const* x, float* out) {
  const std::int8_t* xq[NV];  // once, not reloaded from x for every chunk
  const float* xscale[NV];
  for (int v = 0; v < NV; ++v) {
    xq[v] = x[v]->q.data();
    xscale[v] = x[v]->block_scale.data();
  }
  if (cols % 64 != 0 || cols == 0) return q8_group_any<R, NV, B>(q, ws, cols, stride, xq, xscale, out);
  q8_sums<R, NV, B, true>(q, ws, cols, stride, xq, xscale, out);
}

// Rows a pass of NV vectors takes: 4 * R * NV accumulators and a chunk pair's activations of
// the NV vectors within the 32 registers.
template <int NV>
inline constexpr int kQ8VectorRows = NV == 1 ? 4 : NV == 2 ? 2 : 1;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_rows.h"
