#pragma once
// The body of the 256-bit q8 row kernels, shared by gemv_q8_avx2.cpp and
// gemv_q8_avx_vnni.cpp, which differ only in how they form the int32 lane sums. The including
// file defines ORION_Q8_TARGET (its target attribute) and, before including this, a struct
// LaneDot with
//   __m256i operator()(__m256i abs_x, __m256i w_signed) const;  // 8 exact int32 lane sums
// of |xq| (unsigned bytes) times q with xq's sign (signed bytes).
//
// A register holds 32 columns, 8 lanes: half of the 16 accumulators of gemv.h's numerics.
// Chunk k of 32 columns feeds accumulators 0-7 when k is even and 8-15 when k is odd, so each
// row keeps two registers of accumulators and the result is bit for bit the 512-bit one.
// Columns are a multiple of the block (32 or 64), so there are no partial registers. The batched
// form (q8_group_vectors) takes each row's chunk once for several vectors.
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

#define ORION_PASSES_TARGET ORION_Q8_TARGET
#include "exec/cpu/gemv_passes.h"

namespace orion::exec::cpu::detail {
namespace {

ORION_Q8_TARGET inline float reduce_lanes(__m256 lo, __m256 hi) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): the order gemv.h states.
  const __m256 v8 = _mm256_add_ps(lo, hi);
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
}

// Columns [32k, 32k + 32) of R rows and NV vectors into the accumulators acc[r][v] (one of each
// row's two per vector). With P > 0, each row's weights P bytes ahead are prefetched, once per
// 64-byte line (k even). Each row's weights and scale are loaded once for the NV vectors.
template <int R, int NV, int B, int P>
ORION_Q8_TARGET inline void q8_half(const std::int8_t* q, const float* ws, std::int64_t cols,
                                    std::int64_t nb, std::int64_t stride, const std::int8_t* const* xq_all,
                                    const float* const* ls_all, std::int64_t k, __m256 (*acc)[NV]) {
  const LaneDot dot;
  __m256i xq[NV], xa[NV];
  __m256 ls[NV];
  for (int v = 0; v < NV; ++v) {
    xq[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq_all[v] + 32 * k));
    xa[v] = _mm256_abs_epi8(xq[v]);
    ls[v] = _mm256_loadu_ps(ls_all[v] + 8 * k);
  }
  for (int r = 0; r < R; ++r) {
    const std::int8_t* row = q + r * stride * cols + 32 * k;
    if constexpr (P > 0)
      if (k % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(row + P), _MM_HINT_T0);
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
    const __m256 s = _mm256_broadcast_ss(ws + r * stride * nb + 32 * k / B);
    for (int v = 0; v < NV; ++v) {
      const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot(xa[v], _mm256_sign_epi8(w, xq[v]))), ls[v]);
      acc[r][v] = _mm256_fmadd_ps(t, s, acc[r][v]);
    }
  }
}

// The R rows' sums over every 32-column chunk: pairs into lo and hi, then the last chunk into
// lo when their number is odd. With WholePairs (the caller knows there is at least one pair and
// no odd chunk), the loop has no path around it and no chunk after it: with either, GCC 12
// keeps the four-row group's eight accumulators in registers but also stores them to the stack
// on every iteration (8 of the loop's 94 instructions).
template <int R, int B, int P, bool WholePairs>
ORION_Q8_TARGET inline void q8_sums(const std::int8_t* q, const float* ws, std::int64_t cols,
                                    std::int64_t stride, const std::int8_t* xq, const float* ls,
                                    float* out) {
  const std::int64_t nb = cols / B, halves = cols / 32, pairs_end = halves - halves % 2;
  const std::int8_t* const xqs[1] = {xq};
  const float* const lss[1] = {ls};
  __m256 lo[R][1], hi[R][1];
  for (int r = 0; r < R; ++r) lo[r][0] = hi[r][0] = _mm256_setzero_ps();
  std::int64_t k = 0;
  if (WholePairs || pairs_end > 0) {
    do {
      q8_half<R, 1, B, P>(q, ws, cols, nb, stride, xqs, lss, k, lo);
      q8_half<R, 1, B, P>(q, ws, cols, nb, stride, xqs, lss, k + 1, hi);
      k += 2;
    } while (k < pairs_end);
  }
  if constexpr (!WholePairs)
    if (k < halves) q8_half<R, 1, B, P>(q, ws, cols, nb, stride, xqs, lss, k, lo);
  for (int r = 0; r < R; ++r) out[r] = reduce_lanes(lo[r][0], hi[r][0]);
}

// Any number of chunks: q8_group's rare case, kept out of line so that its paths stay out of
// the common loop.
template <int R, int B, int P>
[[gnu::noinline]] ORION_Q8_TARGET void q8_group_any(const std::int8_t* q, const float* ws,
                                                    std::int64_t cols, std::int64_t stride,
                                                    const std::int8_t* xq, const float* ls,
                                                    float* out) {
  q8_sums<R, B, P, false>(q, ws, cols, stride, xq, ls, out);
}

// Widths of whole chunk pairs (multiples of 64, as all of GPT-2's are) take the loop without
// the stack stores; the sums and their order are the same either way.
template <int R, int B, int P>
ORION_Q8_TARGET inline void q8_group(const std::int8_t* q, const float* ws, std::int64_t cols,
                                     std::int64_t stride, const QuantizedActivation& x,
                                     float* out) {
  const std::int64_t halves = cols / 32;
  const std::int8_t* xq = x.q.data();  // once, not reloaded from x for every chunk
  const float* ls = x.lane_scale.data();
  if (halves % 2 != 0 || halves == 0)
    return q8_group_any<R, B, P>(q, ws, cols, stride, xq, ls, out);
  q8_sums<R, B, P, true>(q, ws, cols, stride, xq, ls, out);
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v], each (row, vector) pair with
// q8_sums' arithmetic. One vector goes through q8_group; for several, the two accumulators of a
// pair go one after the other (gemv_passes.h), each a pass over the rows' even or odd chunks (the
// second from L1), so that the pairs' accumulators and each chunk's activations fit in the 16
// registers.
template <int R, int NV, int B, int P>
ORION_Q8_TARGET inline void q8_group_vectors(const std::int8_t* q, const float* ws, std::int64_t cols,
                                             std::int64_t stride, const QuantizedActivation* const* x, float* out) {
  if constexpr (NV == 1) return q8_group<R, B, P>(q, ws, cols, stride, *x[0], out);
  const std::int64_t nb = cols / B, halves = cols / 32;
  const std::int8_t* xq[NV];
  const float* ls[NV];
  for (int v = 0; v < NV; ++v) {
    xq[v] = x[v]->q.data();
    ls[v] = x[v]->lane_scale.data();
  }
  __m256 part[2][R][NV];
  accumulator_passes(part, _mm256_setzero_ps(), [&](auto parity, __m256(&acc)[R][NV]) ORION_Q8_TARGET {
    for (std::int64_t k = decltype(parity)::value; k < halves; k += 2) q8_half<R, NV, B, P>(q, ws, cols, nb, stride, xq, ls, k, acc);
  });
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = reduce_lanes(part[0][r][v], part[1][r][v]);
}

// Rows a pass of NV vectors takes: R * NV accumulators and 3 * NV registers of a chunk's
// activations (which GCC may keep in memory) within the 16.
template <int NV>
inline constexpr int kQ8VectorRows = 2;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_rows.h"
