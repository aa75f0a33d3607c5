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
// scale and bias as scalars. No partial registers: columns are a multiple of 32.
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

// The first J registers (J = 1..4) of chunk j of R rows into their accumulators acc[r][0..J).
template <int R, int G, int J>
ORION_Q4_TARGET inline void q4_chunk(const std::uint8_t* q, const float* sb, std::int64_t row_bytes,
                                     std::int64_t row_floats, std::int64_t stride, const Q4Activation& x,
                                     std::int64_t j, float32x4_t (*acc)[4]) {
  const LaneDot dot;
  const std::int8_t* xd = x.digits.data() + kQ4ChunkBytes * j;
  for (int p = 0; p < J; ++p) {
    const int8x16_t digits[4] = {vld1q_s8(xd + kQ4HighEven + 16 * p), vld1q_s8(xd + kQ4HighOdd + 16 * p),
                                 vld1q_s8(xd + kQ4LowEven + 16 * p), vld1q_s8(xd + kQ4LowOdd + 16 * p)};
    const std::int64_t lane = 16 * j + 4 * p;
    const float32x4_t unit = vld1q_f32(x.lane_unit.data() + lane);
    const std::int64_t group = lane * kQ4LaneColumns / G;
    for (int r = 0; r < R; ++r) {
      const uint8x16_t w = vld1q_u8(q + r * stride * row_bytes + 64 * j + 16 * p);
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(w, vdupq_n_u8(0x0f)));
      const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(w, 4));
      const float32x4_t t = vmulq_f32(vcvtq_f32_s32(dot(lo, hi, digits)), unit);
      acc[r][p] = vfmaq_n_f32(acc[r][p], t, sb[r * stride * row_floats + 2 * group]);
    }
  }
}

// The biases: groups [4m, 4m + 4) of R rows into acc[r][m % 4] (group k goes to lane k % 16);
// vld2q_f32 splits a row's 4 (scale, bias) pairs into scales and biases. A row's last `rest`
// groups (1 to 3) are copied out first; the missing ones add 0 * 0 and leave their lanes as
// they are.
template <int R>
ORION_Q4_TARGET inline void q4_biases(const float* sb, std::int64_t ng, std::int64_t stride, const float* group_sum,
                                      float32x4_t (*acc)[4]) {
  std::int64_t m = 0;
  for (; m < ng / 4; ++m) {
    const float32x4_t X = vld1q_f32(group_sum + 4 * m);
    for (int r = 0; r < R; ++r) {
      float32x4_t& a = acc[r][m % 4];
      a = vfmaq_f32(a, vld2q_f32(sb + r * stride * 2 * ng + 8 * m).val[1], X);
    }
  }
  if (const std::int64_t rest = ng % 4; rest != 0) {
    const float32x4_t X = vld1q_f32(group_sum + 4 * m);
    for (int r = 0; r < R; ++r) {
      float pairs[8] = {};
      for (std::int64_t i = 0; i < 2 * rest; ++i) pairs[i] = sb[r * stride * 2 * ng + 8 * m + i];
      float32x4_t& a = acc[r][m % 4];
      a = vfmaq_f32(a, vld2q_f32(pairs).val[1], X);
    }
  }
}

// The R rows' sums over every whole chunk, then the last J registers of a row that ends part
// way through a chunk, then the biases.
template <int R, int G>
ORION_Q4_TARGET inline void q4_sums(const std::uint8_t* q, const float* sb, std::int64_t cols, std::int64_t stride,
                                    const Q4Activation& x, float* out) {
  const std::int64_t row_bytes = cols / 2, row_floats = 2 * (cols / G), chunks = cols / kQ4Chunk;
  float32x4_t acc[R][4];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = vdupq_n_f32(0.0f);
  for (std::int64_t j = 0; j < chunks; ++j) q4_chunk<R, G, 4>(q, sb, row_bytes, row_floats, stride, x, j, acc);
  switch (cols % kQ4Chunk / 32) {
    case 1:
      q4_chunk<R, G, 1>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    case 2:
      q4_chunk<R, G, 2>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    case 3:
      q4_chunk<R, G, 3>(q, sb, row_bytes, row_floats, stride, x, chunks, acc);
      break;
    default:
      break;
  }
  q4_biases<R>(sb, cols / G, stride, x.group_sum.data(), acc);
  for (int r = 0; r < R; ++r) out[r] = q4_reduce_lanes(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

// P (how far ahead to prefetch, gemv_q4_rows.h) is unused: nothing here prefetches, since no
// arm64 hardware has measured whether it pays.
template <int R, int G, int P>
ORION_Q4_TARGET inline void q4_group(const std::uint8_t* q, const float* sb, std::int64_t cols, std::int64_t stride,
                                     const Q4Activation& x, float* out) {
  q4_sums<R, G>(q, sb, cols, stride, x, out);
}

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_rows.h"
