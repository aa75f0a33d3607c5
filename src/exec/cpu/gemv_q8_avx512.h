#pragma once
// The body of the 512-bit q8 row kernels, shared by gemv_q8_avx512_vnni.cpp and
// gemv_q8_avx512bw.cpp, which differ only in how they form the int32 lane sums. The including
// file defines ORION_Q8_TARGET (its target attribute) and, before including this, a struct
// LaneDot with
//   struct X;                                      // per 64 columns of x, shared by 4 rows
//   X load(const QuantizedActivation&, std::int64_t chunk) const;
//   __m512i weights(__m512i w) const;              // 64 weights as operator() takes them
//   __m512i operator()(const X&, __m512i w) const;  // the 16 exact int32 lane sums
//
// Each 64 columns of a row are one register of weights: 16 lanes of 4 columns, whose sums go
// to the row's 16 f32 accumulators (gemv.h, q8 numerics), lane l of the register into
// accumulator l. Four rows (detail::for_row_groups) share each chunk of x. A row of a block
// 32 model may end half way through a chunk: the last chunk then loads 32 weights (masked) and
// updates only lanes 0-7. The batched form takes each row's chunk once for several vectors.
#include <type_traits>

#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/intrinsics.h"

namespace orion::exec::cpu::detail {
namespace {

// The row's 16 lane scales for chunk j: block B = 64 is one block per chunk; B = 32 puts
// block 2j in lanes 0-7 and block 2j + 1 in lanes 8-15.
template <int B>
ORION_Q8_TARGET inline __m512 chunk_scales(const float* ws, std::int64_t j) {
  if constexpr (B == 64) {
    return _mm512_set1_ps(ws[j]);
  } else {
    const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128 two = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + 2 * j)));
    return _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(two));
  }
}

ORION_Q8_TARGET inline float reduce_lanes(__m512 a) {
  // (i + 8), then (i + 4), (i + 2), (i + 1): the order gemv.h states.
  __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)));
}

// R rows (`stride` rows apart) times NV vectors: out[r * NV + v]. Each row's weights and scales
// are loaded (and prepared: LaneDot::weights) once for the NV vectors; each (row, vector) pair
// gets the single vector's arithmetic (NV = 1), whatever NV. P (software prefetch) is not used:
// on the AVX-512 machine measured (Zen 5), prefetching added nothing on top of the row order of
// for_row_groups (gemv.h).
template <int R, int NV, int B, int P>
ORION_Q8_TARGET inline void q8_group_vectors(const std::int8_t* q, const float* ws, std::int64_t cols,
                                             std::int64_t stride, const QuantizedActivation* const* x, float* out) {
  const LaneDot dot;
  const std::int64_t nb = cols / B, full = cols / kQ8Chunk;
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  const auto chunk = [&](std::int64_t j, auto tail) ORION_Q8_TARGET {
    constexpr bool kTail = decltype(tail)::value;  // B == 32: half a chunk, lanes 0-7
    typename LaneDot::X xj[NV];
    __m512 ls[NV];
    for (int v = 0; v < NV; ++v) {
      xj[v] = dot.load(*x[v], j);
      ls[v] = _mm512_loadu_ps(x[v]->lane_scale.data() + 16 * j);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const std::int8_t* row = q + r * stride * cols + kQ8Chunk * j;
      const __m512i w = dot.weights(kTail ? _mm512_maskz_loadu_epi8(0xffffffffull, row) : _mm512_loadu_si512(row));
      const __m512 s = kTail ? _mm512_set1_ps(ws[r * stride * nb + 2 * j]) : chunk_scales<B>(ws + r * stride * nb, j);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(dot(xj[v], w)), ls[v]);
        acc[r][v] = kTail ? _mm512_mask3_fmadd_ps(t, s, acc[r][v], 0x00ff) : _mm512_fmadd_ps(t, s, acc[r][v]);
      }
    }
  };
  for (std::int64_t j = 0; j < full; ++j) chunk(j, std::false_type{});
  if (full * kQ8Chunk < cols) chunk(full, std::true_type{});
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) out[r * NV + v] = reduce_lanes(acc[r][v]);
}

// Rows a pass of NV vectors takes: four, as the single vector's, four streams through W (two
// were slower: docs/PERFORMANCE.md, "Batched f16 and q8"). GCC keeps the 16 accumulators in
// registers and takes each chunk's activations as memory operands.
template <int NV>
inline constexpr int kQ8VectorRows = 4;

}  // namespace
}  // namespace orion::exec::cpu::detail

#include "exec/cpu/gemv_q8_rows.h"
