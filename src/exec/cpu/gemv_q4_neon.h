#pragma once
// The body of the arm64 q4 row kernels, shared by gemv_q4_neon.cpp and
// gemv_q4_neon_dotprod.cpp, which differ only in how they form the int32 lane sums. The
// including file defines ORION_Q4_TARGET (its target attribute, or nothing) and, before
// including this, a struct LaneDot with
//   int32x4_t operator()(int8x16_t lo, int8x16_t hi, const int8x16_t* digits) const;
// the 4 exact lane sums L (gemv_q4.h) of 16 bytes of a row: lo and hi their low and high
// nibbles (0..15, as signed bytes), digits the matching 16 of each of the chunk's four runs of
// activation digits (q4_activation.h).
//
// A register holds 16 bytes, 32 columns, 4 lanes: each 128 columns of a row are four registers,
// whose 16 lane sums go to the row's four registers of accumulators, lane l of the chunk into
// accumulator l. A register never straddles a group (32 columns at least), so each takes its
// scale and bias as scalars. No partial registers: columns are a multiple of 32. The batched
// form takes each row's registers once for several vectors.
#include <arm_neon.h>

#include "exec/cpu/gemv_q4.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q4_TARGET inline float q4_reduce_lanes(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): gemv_q8's order (gemv.h).
  const float32x4_t v4 = vaddq_f32(vaddq_f32(a0, a2), vaddq_f32(a1, a3));
  const float32x2_t v2 = vadd_f32(vget_low_f32(v4), vget_high_f32(v4));
  return vget_lane_f32(v2, 0) + vget_lane_f32(v2, 1);
}

// The first J registers (J = 1..4) of chunk j of R rows and NV vectors into their accumulators
// acc[r][v][0..J). Each row's nibbles and scale serve the NV vectors.
template <int R, int NV, int G, int J>
ORION_Q4_TARGET inline void q4_chunk(const std::uint8_t* q, const float* sb, std::int64_t row_bytes,
                                     std::int64_t row_floats, std::int64_t stride, const Q4Activation* const* x,
                                     std::int64_t j, float32x4_t (*acc)[NV][4]) {
  const LaneDot dot;
  for (int p = 0; p < J; ++p) {
    const std::int64_t lane = 16 * j + 4 * p;
    const std::int64_t group = lane * kQ4LaneColumns / G;
    int8x16_t digits[NV][4];
    float32x4_t unit[NV];
    for (int v = 0; v < NV; ++v) {
      const std::int8_t* xd = x[v]->digits.data() + kQ4ChunkBytes * j + 16 * p;
      digits[v][0] = vld1q_s8(xd + kQ4HighEven);
      digits[v][1] = vld1q_s8(xd + kQ4HighOdd);
      digits[v][2] = vld1q_s8(xd + kQ4LowEven);
      digits[v][3] = vld1q_s8(xd + kQ4LowOdd);
      unit[v] = vld1q_f32(x[v]->lane_unit.data() + lane);
    }
    for (int r = 0; r < R; ++r) {
      const uint8x16_t w = vld1q_u8(q + r * stride * row_bytes + 64 * j + 16 * p);
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(w, vdupq_n_u8(0x0f)));
      const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(w, 4));
      const float scale = sb[r * stride * row_floats + 2 * group];
      for (int v = 0; v < NV; ++v) {
        const float32x4_t t = vmulq_f32(vcvtq_f32_s32(dot(lo, hi, digits[v])), unit[v]);
        acc[r][v][p] = vfmaq_n_f32(acc[r][v][p], t, scale);
      }
    }
  }
}

// The biases: groups [4m, 4m + 4) of R rows and NV vectors into acc[r][v][m % 4] (group k goes to
// lane k % 16); vld2q_f32 splits a row's 4 (scale, bias) pairs into scales and biases. A row's
// last `rest` groups (1 to 3) are copied out first; the missing ones add 0 * 0 and leave their
// lanes as they are.
template <int R, int NV>
ORION_Q4_TARGET inline void q4_biases(const float* sb, std::int64_t ng, std::int64_t stride,
                                      const Q4Activation* const* x, float32x4_t (*acc)[NV][4]) {
  const auto block = [&](std::int64_t m, const auto& biases_of) {
    for (int r = 0; r < R; ++r) {
      const float32x4_t b = biases_of(sb + r * stride * 2 * ng + 8 * m);
      for (int v = 0; v < NV; ++v) {
        float32x4_t& a = acc[r][v][m % 4];
        a = vfmaq_f32(a, b, vld1q_f32(x[v]->group_sum.data() + 4 * m));
      }
    }
  };
  std::int64_t m = 0;
  for (; m < ng / 4; ++m) block(m, [](const float* at) { return vld2q_f32(at).val[1]; });
  if (const std::int64_t rest = ng % 4; rest != 0)
    block(m, [&](const float* at) {
      float pairs[8] = {};
      for (std::int64_t i = 0; i < 2 * rest; ++i) pairs[i] = at[i];
      return vld2q_f32(pairs).val[1];
    });
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v]. Every whole chunk, then the last
// J registers of a row that ends part way through a chunk, then the biases. P (how far ahead to
// prefetch, gemv_q4_rows.h) is unused: nothing here prefetches, since no arm64 hardware has
// measured whether it pays.
template <int R, int NV, int G, int P>
ORION_Q4_TARGET inline void q4_group_vectors(const std::uint8_t* q, const float* sb, std::int64_t cols,
                                             std::int64_t stride, const Q4Activation* const* x, float* out) {
  const std::int64_t row_bytes = cols / 2, row_floats = 2 * (cols / G), chunks = cols / kQ4Chunk;
  float32x4_t acc[R][NV][4];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v][0] = acc[r][v][1] = acc[r][v][2] = acc[r][v][3] = vdupq_n_f32(0.0f);
  for (std::int64_t j = 0; j < chunks; ++j) q4_chunk<R, NV, G, 4>(q, sb, row_bytes, row_floats, stride, x, j, acc);
  switch (cols % kQ4Chunk / 32) {
    case 1:
      q4_chunk<R, NV, G, 1>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    case 2:
      q4_chunk<R, NV, G, 2>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    case 3:
      q4_chunk<R, NV, G, 3>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    default:
      break;
  }
  q4_biases<R, NV>(sb, cols / G, stride, x, acc);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = q4_reduce_lanes(acc[r][v][0], acc[r][v][1], acc[r][v][2], acc[r][v][3]);
}

// Rows a pass of NV vectors takes: 4 * R * NV accumulators beside a register's nibbles and
// digits within the 32 registers.
template <int NV>
inline constexpr int kQ4VectorRows = NV == 1 ? 4 : NV == 2 ? 2 : 1;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_rows.h"
