#pragma once
// The body of the 512-bit q4 row kernels, shared by gemv_q4_avx512_vnni.cpp and
// gemv_q4_avx512bw.cpp, which differ only in how they form the int32 lane sums. The including
// file defines ORION_Q4_TARGET (its target attribute) and, before including this, a struct
// LaneDot with
//   __m512i operator()(__m512i lo, __m512i hi, const __m512i* digits) const;
// the 16 exact lane sums L (gemv_q4.h) of a chunk: lo and hi are the low and high nibbles of 64
// bytes of a row as unsigned bytes, digits the chunk's four runs of activation digits
// (q4_activation.h: high even, high odd, low even, low odd).
//
// Each 128 columns of a row are one register of its bytes: 16 lanes, whose sums go to the
// row's 16 f32 accumulators, lane l of the register into accumulator l. Four rows
// (detail::for_row_groups) share each chunk of the activation. A row whose length is not a
// whole number of chunks ends with a masked chunk that updates only its lanes.
#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q4_TARGET inline float q4_reduce_lanes(__m512 a) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): gemv_q8's order (gemv.h).
  const __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
}

// The row's scales of the 16 lanes of chunk j, from its (scale, bias) pairs: a group of 128 is
// the whole chunk, 64 half of it, 32 a quarter. In a row's last, partial chunk (Tail) `pairs`
// masks the floats that exist.
template <int G, bool Tail>
ORION_Q4_TARGET inline __m512 q4_lane_scales(const float* sb, std::int64_t j, __mmask16 pairs) {
  constexpr int kFloats = 2 * kQ4Chunk / G;  // 2, 4 or 8
  const float* at = sb + kFloats * j;
  if constexpr (G == 128) {
    return _mm512_set1_ps(*at);
  } else {
    const __m512 v = Tail ? _mm512_maskz_loadu_ps(pairs, at)
                          : (G == 64 ? _mm512_castps128_ps512(_mm_loadu_ps(at)) : _mm512_castps256_ps512(_mm256_loadu_ps(at)));
    // Lane l's group is l / (G / 8): its scale is float 2 * (l / (G / 8)).
    const __m512i pick = G == 64 ? _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0)
                                 : _mm512_set_epi32(6, 6, 6, 6, 4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(pick, v);
  }
}

// One chunk of R rows and NV vectors into their accumulators acc[r][v]; Tail: the row's last
// chunk, partial (the masks say which bytes, lanes and scale floats exist). With P > 0 each
// row's bytes and scales P bytes of weights ahead are prefetched (q4_prefetch, gemv_q4.h). The
// nibbles and scales of a row serve every vector; each vector's arithmetic is the single
// vector's (NV = 1), whatever NV.
template <int R, int NV, int G, int P, bool Tail>
ORION_Q4_TARGET inline void q4_chunk(const std::uint8_t* q, const float* sb, std::int64_t row_bytes,
                                     std::int64_t row_floats, std::int64_t stride, const std::int8_t* const* digits_all,
                                     const float* const* unit_all, std::int64_t j, __mmask64 bytes, __mmask16 lanes,
                                     __mmask16 pairs, __m512 (*acc)[NV]) {
  const LaneDot dot;
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  // Unrolled, so that the accumulators stay in registers (GCC 12 kept the 4 x 4 of them in memory
  // with the loops rolled).
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const std::uint8_t* row = q + r * stride * row_bytes + 64 * j;
    if constexpr (P > 0) q4_prefetch<G, P>(row, sb + r * stride * row_floats, 64 * j);
    const __m512i w = Tail ? _mm512_maskz_loadu_epi8(bytes, row) : _mm512_loadu_si512(row);
    const __m512i lo = _mm512_and_si512(w, nibble);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), nibble);
    const __m512 s = q4_lane_scales<G, Tail>(sb + r * stride * row_floats, j, pairs);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const std::int8_t* xd = digits_all[v] + kQ4ChunkBytes * j;
      const __m512i digits[4] = {_mm512_loadu_si512(xd + kQ4HighEven), _mm512_loadu_si512(xd + kQ4HighOdd),
                                 _mm512_loadu_si512(xd + kQ4LowEven), _mm512_loadu_si512(xd + kQ4LowOdd)};
      const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(dot(lo, hi, digits)), _mm512_loadu_ps(unit_all[v] + 16 * j));
      acc[r][v] = Tail ? _mm512_mask3_fmadd_ps(t, s, acc[r][v], lanes) : _mm512_fmadd_ps(t, s, acc[r][v]);
    }
  }
}

// The biases: groups [16m, 16m + 16) of R rows into their accumulators, group k into lane k %
// 16. Each row's 16 (scale, bias) pairs are two registers, whose odd floats are the biases;
// `pairs` masks the floats that exist (of the 32) in a row's last, partial block. Missing
// groups add b * X = 0 * 0 to their lane, which leaves it as it is (an accumulator that starts
// at +0 never holds -0).
template <int R, int NV>
ORION_Q4_TARGET inline void q4_bias_block(const float* sb, std::int64_t row_floats, std::int64_t stride,
                                          const float* const* group_sum, std::int64_t m, __mmask32 pairs,
                                          __m512 (*acc)[NV]) {
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const float* at = sb + r * stride * row_floats + 32 * m;
    const __m512 v0 = _mm512_maskz_loadu_ps(static_cast<__mmask16>(pairs), at);
    const __m512 v1 = _mm512_maskz_loadu_ps(static_cast<__mmask16>(pairs >> 16), at + 16);
    const __m512 b = _mm512_permutex2var_ps(v0, odd, v1);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(b, _mm512_loadu_ps(group_sum[v] + 16 * m), acc[r][v]);
  }
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v].
template <int R, int NV, int G, int P>
ORION_Q4_TARGET inline void q4_group_vectors(const std::uint8_t* q, const float* sb, std::int64_t cols,
                                             std::int64_t stride, const Q4Activation* const* x, float* out) {
  const std::int64_t row_bytes = cols / 2, ng = cols / G, row_floats = 2 * ng, full = cols / kQ4Chunk;
  const std::int8_t* digits[NV];  // once, not reloaded from x for every chunk
  const float *unit[NV], *group_sum[NV];
  for (int v = 0; v < NV; ++v) {
    digits[v] = x[v]->digits.data();
    unit[v] = x[v]->lane_unit.data();
    group_sum[v] = x[v]->group_sum.data();
  }
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < full; ++j)
    q4_chunk<R, NV, G, P, false>(q, sb, row_bytes, row_floats, stride, digits, unit, j, 0, 0, 0, acc);
  if (const std::int64_t rest = cols % kQ4Chunk; rest != 0) {  // 32, 64 or 96 columns (G < 128)
    const __mmask64 bytes = (__mmask64{1} << (rest / 2)) - 1;
    const auto lanes = static_cast<__mmask16>((1u << (rest / kQ4LaneColumns)) - 1);
    const auto pairs = static_cast<__mmask16>((1u << (2 * rest / G)) - 1);
    q4_chunk<R, NV, G, P, true>(q, sb, row_bytes, row_floats, stride, digits, unit, full, bytes, lanes, pairs, acc);
  }
  for (std::int64_t m = 0; m < ng / 16; ++m) q4_bias_block<R, NV>(sb, row_floats, stride, group_sum, m, 0xffffffffu, acc);
  if (const std::int64_t rest = ng % 16; rest != 0)
    q4_bias_block<R, NV>(sb, row_floats, stride, group_sum, ng / 16, static_cast<__mmask32>((std::uint64_t{1} << (2 * rest)) - 1), acc);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = q4_reduce_lanes(acc[r][v]);
}

// Rows a pass of NV vectors takes (gemv_q4_rows.h): four, as the single vector's, whose 16
// accumulators at four vectors fill half the 32 registers.
template <int NV>
inline constexpr int kQ4VectorRows = 4;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_rows.h"
