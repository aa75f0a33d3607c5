#pragma once
// The body of the 256-bit q4 row kernels, shared by gemv_q4_avx2.cpp and gemv_q4_avx_vnni.cpp,
// which differ only in how they form the int32 lane sums. The including file defines
// ORION_Q4_TARGET (its target attribute) and, before including this, a struct LaneDot with
//   __m256i operator()(__m256i lo, __m256i hi, const __m256i* digits) const;
// the 8 exact lane sums L (gemv_q4.h) of 32 bytes of a row: lo and hi their low and high
// nibbles as unsigned bytes, digits the matching 32 of each of the chunk's four runs of
// activation digits (q4_activation.h).
//
// A register holds 32 bytes, 64 columns, 8 lanes: half of a chunk and of the 16 accumulators
// of the numerics. Half k of a row feeds accumulators 0-7 when k is even and 8-15 when k is
// odd, so each row keeps two registers of accumulators and the result is bit for bit the
// 512-bit one. A row of group 32 may end half way through a register: its last 16 bytes then
// update only lanes 0-3. The batched form (q4_group_vectors) takes each row's halves once for
// several vectors.
#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/intrinsics.h"

#define ORION_PASSES_TARGET ORION_Q4_TARGET
#include "exec/cpu/gemv_passes.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q4_TARGET inline float q4_reduce_halves(__m256 lo, __m256 hi) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): gemv_q8's order (gemv.h).
  const __m256 v8 = _mm256_add_ps(lo, hi);
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
}

// The row's scales of the 8 lanes of half k (columns [64k, 64k + 64)). Tail: the half has only
// its first 32 columns, one group of 32.
template <int G, bool Tail>
ORION_Q4_TARGET inline __m256 q4_half_scales(const float* sb, std::int64_t k) {
  if constexpr (G == 32 && !Tail) {
    const __m256 v = _mm256_castps128_ps256(_mm_loadu_ps(sb + 4 * k));
    return _mm256_permutevar8x32_ps(v, _mm256_set_epi32(2, 2, 2, 2, 0, 0, 0, 0));
  } else {
    return _mm256_broadcast_ss(sb + 2 * (64 * k / G));
  }
}

// Half k of R rows and NV vectors into the accumulators acc[r][v] (one of each row's two per
// vector). With P > 0, each row's bytes and scales P bytes of weights ahead are prefetched
// (q4_prefetch, gemv_q4.h), on every other half (a 64-byte line of weights). In a Tail half the
// lanes past the row's end add t * s = 0 (zero weights and digits) and stay as they are. Each
// row's nibbles and scales serve the NV vectors.
template <int R, int NV, int G, int P, bool Tail>
ORION_Q4_TARGET inline void q4_half(const std::uint8_t* q, const float* sb, std::int64_t row_bytes,
                                    std::int64_t row_floats, std::int64_t stride, const std::int8_t* const* digits_all,
                                    const float* const* unit_all, std::int64_t k, __m256 (*acc)[NV]) {
  const LaneDot dot;
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  __m256i digits[NV][4];
  __m256 unit[NV];
  for (int v = 0; v < NV; ++v) {
    const std::int8_t* xd = digits_all[v] + kQ4ChunkBytes * (k / 2) + 32 * (k % 2);
    digits[v][0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xd + kQ4HighEven));
    digits[v][1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xd + kQ4HighOdd));
    digits[v][2] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xd + kQ4LowEven));
    digits[v][3] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xd + kQ4LowOdd));
    unit[v] = _mm256_loadu_ps(unit_all[v] + 8 * k);
  }
  for (int r = 0; r < R; ++r) {
    const std::uint8_t* row = q + r * stride * row_bytes + 32 * k;
    if constexpr (P > 0)
      if (k % 2 == 0) q4_prefetch<G, P>(row, sb + r * stride * row_floats, 32 * k);
    const __m256i w = Tail ? _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row)))
                           : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
    const __m256i lo = _mm256_and_si256(w, nibble);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble);
    const __m256 s = q4_half_scales<G, Tail>(sb + r * stride * row_floats, k);
    for (int v = 0; v < NV; ++v) {
      const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot(lo, hi, digits[v])), unit[v]);
      acc[r][v] = _mm256_fmadd_ps(t, s, acc[r][v]);
    }
  }
}

// The biases: groups [8m, 8m + 8) of R rows and NV vectors into acc[r][v] (lo or hi: group k goes
// to lane k % 16). Each row's 8 (scale, bias) pairs are two registers; their odd floats, the
// biases, come out of vshufps as groups 0 1 4 5 2 3 6 7 and vpermpd puts them in order. A row's
// last, partial block loads only the `floats` that exist (2 to 14); the missing groups add 0 * 0
// and leave their lanes as they are.
template <int R, int NV, bool Partial>
ORION_Q4_TARGET inline void q4_bias_block(const float* sb, std::int64_t row_floats, std::int64_t stride,
                                          const float* const* group_sum, std::int64_t m, int floats, __m256 (*acc)[NV]) {
  __m256 X[NV];
  for (int v = 0; v < NV; ++v) X[v] = _mm256_loadu_ps(group_sum[v] + 8 * m);
  const __m256i index = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(floats), index);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(floats - 8), index);
  for (int r = 0; r < R; ++r) {
    const float* at = sb + r * stride * row_floats + 16 * m;
    const __m256 v0 = Partial ? _mm256_maskload_ps(at, mask0) : _mm256_loadu_ps(at);
    const __m256 v1 = Partial ? _mm256_maskload_ps(at + 8, mask1) : _mm256_loadu_ps(at + 8);
    const __m256 b = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(v0, v1, 0xdd)), 0xd8));
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(b, X[v], acc[r][v]);
  }
}

// The bias blocks m = first, first + step, ... (and the partial one at the end, when the walk
// reaches it), block m into acc_of(m).
template <int R, int NV, class AccOf>
ORION_Q4_TARGET inline void q4_biases(const float* sb, std::int64_t ng, std::int64_t stride,
                                      const float* const* group_sum, std::int64_t first, std::int64_t step,
                                      const AccOf& acc_of) {
  std::int64_t m = first;
  for (; m < ng / 8; m += step) q4_bias_block<R, NV, false>(sb, 2 * ng, stride, group_sum, m, 16, acc_of(m));
  if (ng % 8 != 0 && m == ng / 8)
    q4_bias_block<R, NV, true>(sb, 2 * ng, stride, group_sum, m, static_cast<int>(2 * (ng % 8)), acc_of(m));
}

// The R rows' sums: pairs of halves into lo and hi, then a last whole half into lo when their
// number is odd, then the partial half of a group-32 row, then the biases. With WholePairs (the caller knows
// there is at least one pair and nothing after the pairs) the loop has no path around it and
// nothing after it, which keeps GCC 12 from storing the accumulators to the stack on every
// iteration (as in gemv_q8_avx2.h).
template <int R, int G, int P, bool WholePairs>
ORION_Q4_TARGET inline void q4_sums(const std::uint8_t* q, const float* sb, std::int64_t cols, std::int64_t stride,
                                    const Q4Activation& x, float* out) {
  const std::int64_t row_bytes = cols / 2, row_floats = 2 * (cols / G), halves = cols / 64,
                     pairs_end = halves - halves % 2;
  const std::int8_t* const xd[1] = {x.digits.data()};  // once, not reloaded from x for every half
  const float* const unit[1] = {x.lane_unit.data()};
  const float* const group_sum[1] = {x.group_sum.data()};
  __m256 lo[R][1], hi[R][1];
  for (int r = 0; r < R; ++r) lo[r][0] = hi[r][0] = _mm256_setzero_ps();
  std::int64_t k = 0;
  if (WholePairs || pairs_end > 0) {
    do {
      q4_half<R, 1, G, P, false>(q, sb, row_bytes, row_floats, stride, xd, unit, k, lo);
      q4_half<R, 1, G, P, false>(q, sb, row_bytes, row_floats, stride, xd, unit, k + 1, hi);
      k += 2;
    } while (k < pairs_end);
  }
  if constexpr (!WholePairs) {
    if (k < halves) q4_half<R, 1, G, P, false>(q, sb, row_bytes, row_floats, stride, xd, unit, k++, lo);
    if (cols % 64 != 0) q4_half<R, 1, G, P, true>(q, sb, row_bytes, row_floats, stride, xd, unit, k, k % 2 ? hi : lo);
  }
  q4_biases<R, 1>(sb, cols / G, stride, group_sum, 0, 1, [&](std::int64_t m) { return m % 2 ? hi : lo; });
  for (int r = 0; r < R; ++r) out[r] = q4_reduce_halves(lo[r][0], hi[r][0]);
}

// Rows of an odd number of halves, or a partial one: q4_group's rare case, kept out of line so
// that its paths stay out of the common loop.
template <int R, int G, int P>
[[gnu::noinline]] ORION_Q4_TARGET void q4_group_any(const std::uint8_t* q, const float* sb, std::int64_t cols,
                                                    std::int64_t stride, const Q4Activation& x, float* out) {
  q4_sums<R, G, P, false>(q, sb, cols, stride, x, out);
}

template <int R, int G, int P>
ORION_Q4_TARGET inline void q4_group(const std::uint8_t* q, const float* sb, std::int64_t cols, std::int64_t stride,
                                     const Q4Activation& x, float* out) {
  if (cols % kQ4Chunk != 0 || cols == 0) return q4_group_any<R, G, P>(q, sb, cols, stride, x, out);
  q4_sums<R, G, P, true>(q, sb, cols, stride, x, out);
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v], each (row, vector) pair with
// q4_sums' arithmetic: half k and bias block m go to lo when even, hi when odd, in order. One
// vector goes through q4_group; for several, the two accumulators of a pair go one after the
// other (gemv_passes.h), each a pass over the rows' even or odd halves and bias blocks (the
// second from L1), so that the pairs' accumulators fit in the 16 registers beside a row's
// nibbles and scales.
template <int R, int NV, int G, int P>
ORION_Q4_TARGET inline void q4_group_vectors(const std::uint8_t* q, const float* sb, std::int64_t cols,
                                             std::int64_t stride, const Q4Activation* const* x, float* out) {
  if constexpr (NV == 1) return q4_group<R, G, P>(q, sb, cols, stride, *x[0], out);
  const std::int64_t row_bytes = cols / 2, row_floats = 2 * (cols / G), halves = cols / 64;
  const std::int8_t* xd[NV];
  const float *unit[NV], *group_sum[NV];
  for (int v = 0; v < NV; ++v) {
    xd[v] = x[v]->digits.data();
    unit[v] = x[v]->lane_unit.data();
    group_sum[v] = x[v]->group_sum.data();
  }
  __m256 part[2][R][NV];
  accumulator_passes(part, _mm256_setzero_ps(), [&](auto p, __m256(&acc)[R][NV]) ORION_Q4_TARGET {
    constexpr int parity = decltype(p)::value;
    for (std::int64_t k = parity; k < halves; k += 2)
      q4_half<R, NV, G, P, false>(q, sb, row_bytes, row_floats, stride, xd, unit, k, acc);
    if (cols % 64 != 0 && halves % 2 == parity)
      q4_half<R, NV, G, P, true>(q, sb, row_bytes, row_floats, stride, xd, unit, halves, acc);
    q4_biases<R, NV>(sb, cols / G, stride, group_sum, parity, 2, [&](std::int64_t) { return acc; });
  });
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = q4_reduce_halves(part[0][r][v], part[1][r][v]);
}

// Rows a pass of NV vectors takes: R * NV accumulators beside a row's nibbles, its scales and a
// half's digits (which GCC may keep in memory) within the 16 registers.
template <int NV>
inline constexpr int kQ4VectorRows = 2;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q4_rows.h"
