// f32 and f16 gemv kernels for AVX-512 F/BW/VL + FMA + F16C (16 floats per register, 32
// registers); q8 is in gemv_q8_avx512*.cpp. Chosen at run time; nothing here runs unless
// isa_supported(Isa::avx512).
//
// Four rows at a time (in the order of detail::for_row_groups) share each load of x; every row
// keeps four accumulators in the main loop (sixteen independent FMA chains). Column heads (to
// align the loads) and tails use masked loads (AVX-512BW for 16-bit lanes), so no byte
// outside W, x or y is touched.
#include "exec/cpu/gemv.h"

#if defined(__x86_64__)

#include <algorithm>

#include "exec/cpu/intrinsics.h"

#define ORION_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#define ORION_PASSES_TARGET ORION_AVX512
#include "exec/cpu/gemv_passes.h"
// Unrolled before GCC's scalar replacement runs, so that an array of accumulators indexed by
// these loops' counters can live in registers.
#define ORION_UNROLL _Pragma("GCC unroll 16")

namespace orion::exec::cpu::detail {

namespace {

ORION_AVX512 inline __m512 load_half16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

ORION_AVX512 inline __m512 load_half16_masked(const std::uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

ORION_AVX512 inline __mmask16 tail_mask(std::int64_t n) {  // n in [1, 15]
  return static_cast<__mmask16>((1u << n) - 1u);
}

struct LoadF32 {
  ORION_AVX512 __m512 operator()(const float* p) const { return _mm512_loadu_ps(p); }
  ORION_AVX512 __m512 operator()(const float* p, __mmask16 m) const {
    return _mm512_maskz_loadu_ps(m, p);
  }
};
struct LoadF16 {
  ORION_AVX512 __m512 operator()(const std::uint16_t* p) const { return load_half16(p); }
  ORION_AVX512 __m512 operator()(const std::uint16_t* p, __mmask16 m) const {
    return load_half16_masked(p, m);
  }
};

// Load(p) turns 16 weights at p into 16 floats; Load(p, m) the first lanes of m.
template <int R, class Weight, class Load>
ORION_AVX512 inline void dot_group(const Weight* W, std::int64_t ld, const float* x,
                                   std::int64_t cols, std::int64_t head, float* out) {
  const Load load;
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_setzero_ps();
  std::int64_t c = 0;
  if (head > 0) {
    const __mmask16 m = tail_mask(head);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, x);
    for (int r = 0; r < R; ++r)
      acc[r][3] = _mm512_fmadd_ps(load(W + r * ld, m), x0, acc[r][3]);
    c = head;
  }
  for (; c + 64 <= cols; c += 64) {
    __m512 xv[4];
    for (int u = 0; u < 4; ++u) xv[u] = _mm512_loadu_ps(x + c + 16 * u);
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < 4; ++u)
        acc[r][u] = _mm512_fmadd_ps(load(W + r * ld + c + 16 * u), xv[u], acc[r][u]);
  }
  for (int u = 0; c + 16 <= cols; c += 16, ++u) {
    const __m512 x0 = _mm512_loadu_ps(x + c);
    for (int r = 0; r < R; ++r)
      acc[r][u] = _mm512_fmadd_ps(load(W + r * ld + c), x0, acc[r][u]);
  }
  if (c < cols) {
    const __mmask16 m = tail_mask(cols - c);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, x + c);
    for (int r = 0; r < R; ++r)
      acc[r][3] = _mm512_fmadd_ps(load(W + r * ld + c, m), x0, acc[r][3]);
  }
  for (int r = 0; r < R; ++r)
    out[r] = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3])));
}

template <class Weight, class Load>
ORION_AVX512 inline void dot_rows(const Weight* W, const float* x, const float* bias, float* y,
                                  std::int64_t r0, std::int64_t r1, std::int64_t cols,
                                  std::size_t align) {
  const std::int64_t head = aligning_head(W, cols, align);
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX512 {
        dot_group<1, Weight, Load>(W + r * cols, cols, x, cols, head, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX512 {
        dot_group<4, Weight, Load>(W + r * cols, stride * cols, x, cols, head, s);
      });
}

ORION_AVX512 void f32_rows(const float* W, const float* x, const float* bias, float* y,
                           std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  dot_rows<float, LoadF32>(W, x, bias, y, r0, r1, cols, 64);
}

// 16 halves are 32 bytes: 32-byte alignment keeps every load inside one cache line.
ORION_AVX512 void f16_rows(const std::uint16_t* W, const float* x, const float* bias, float* y,
                           std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  dot_rows<std::uint16_t, LoadF16>(W, x, bias, y, r0, r1, cols, 32);
}

// One 16-column step of dot_block: one of the four accumulators of every (row, vector) pair,
// acc[r][v], takes W[r, c..c+16) times x_v[c..c+16) (the lanes of m only). The four
// accumulators are four separate small arrays, each passed to an inlined step: one array of all
// of them (1.5 KiB) was too large for GCC 12 to keep in registers, and it stored every
// accumulator to the stack after each multiply-add.
template <int R, int V, class Weight, class Load>
ORION_AVX512 __attribute__((always_inline)) inline void block_step(__m512 (&acc)[R][V], const Weight* W, std::int64_t ld,
                                                                   const float* const* xs, std::int64_t c, __mmask16 m) {
  const Load load;
  __m512 xv[V];
  ORION_UNROLL
  for (int v = 0; v < V; ++v) xv[v] = _mm512_maskz_loadu_ps(m, xs[v] + c);
  ORION_UNROLL
  for (int r = 0; r < R; ++r) {
    const __m512 w = load(W + r * ld + c, m);
    ORION_UNROLL
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(w, xv[v], acc[r][v]);
  }
}

// Accumulator U of dot_group for R rows and V vectors: every 16-column step that dot_group feeds
// into its accumulator U, in the same order (U = 3 also takes the aligning head and the masked
// tail), into acc[r][v] for each (row, vector) pair. Each row prefetches the row after it (the
// next row of its stream) a 64-byte line at a time.
template <int R, int V, int U, class Weight, class Load>
ORION_AVX512 __attribute__((always_inline)) inline void accumulator_pass(__m512 (&acc)[R][V], const Weight* W, std::int64_t ld,
                                                                         const float* const* xs, std::int64_t cols,
                                                                         std::int64_t head) {
  constexpr __mmask16 all = 0xffff;
  constexpr bool fetch = 16 * U * sizeof(Weight) % 64 == 0;  // a new line of the row
  if (U == 3 && head > 0) block_step<R, V, Weight, Load>(acc, W, ld, xs, 0, tail_mask(head));
  std::int64_t c = head;
  for (; c + 64 <= cols; c += 64) {
    if constexpr (fetch) {
      ORION_UNROLL
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(W + r * ld + cols + c + 16 * U), _MM_HINT_T0);
    }
    block_step<R, V, Weight, Load>(acc, W, ld, xs, c + 16 * U, all);
  }
  const std::int64_t whole = (cols - c) / 16;  // at most three registers left, into accumulators 0, 1, 2
  if (U < whole) block_step<R, V, Weight, Load>(acc, W, ld, xs, c + 16 * U, all);
  if (U == 3 && c + 16 * whole < cols)
    block_step<R, V, Weight, Load>(acc, W, ld, xs, c + 16 * whole, tail_mask(cols - c - 16 * whole));
}

// dot_group<R, Weight, Load> for V vectors at once: out[r * V + v] = dot(W row r, x_v) with, for
// every (r, v), exactly dot_group's arithmetic (the same four accumulators fed in the same
// order, the same head and tail masks, the same final sums), so that a vector's result is the
// same bits as gemv_f32's (gemv_f16's). Each load of W serves V vectors and each load of x R
// rows. Holding all four accumulators of every pair would allow only R * V <= 7 in the 32
// registers, at most 0.83 loads per multiply-add, and the loads were the limit; so the
// accumulators are computed one after the other, each in a pass over the R rows (which stay in
// L1 between passes), and R = V = 4 needs 0.5 loads per multiply-add.
template <int R, int V, class Weight, class Load>
ORION_AVX512 inline void dot_block(const Weight* W, std::int64_t ld, const float* const* xs, std::int64_t cols,
                                   std::int64_t head, float* out) {
  __m512 part[4][R][V];
  accumulator_passes(part, _mm512_setzero_ps(), [&](auto u, __m512(&acc)[R][V]) ORION_AVX512 {
    accumulator_pass<R, V, decltype(u)::value, Weight, Load>(acc, W, ld, xs, cols, head);
  });
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      out[r * V + v] = _mm512_reduce_add_ps(
          _mm512_add_ps(_mm512_add_ps(part[0][r][v], part[1][r][v]), _mm512_add_ps(part[2][r][v], part[3][r][v])));
}

// Rows [r0, r1) of y[v] = W x[v] (+ bias) for V vectors, four rows at a time in
// detail::for_row_groups' order (four long sequential streams through W, each prefetching its
// next row while the passes work on this one).
template <int V, class Weight, class Load>
ORION_AVX512 void rows_for_vectors(const Weight* W, const float* const* xs, const float* bias, float* const* y,
                                   std::int64_t r0, std::int64_t r1, std::int64_t cols, std::int64_t head) {
  for_vector_rows<4, V>(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX512 { dot_block<1, V, Weight, Load>(W + r * cols, cols, xs, cols, head, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX512 {
        dot_block<4, V, Weight, Load>(W + r * cols, stride * cols, xs, cols, head, s);
      });
}

// Two to four vectors against each row (16 accumulators, 4 loads of x and 1 of W per 4
// multiply-adds), so that W streams through once in one long sequential read.
template <class Weight, class Load>
ORION_AVX512 void dense_vectors(const Weight* W, const float* const* x, int n, const float* bias, float* const* y,
                                std::int64_t r0, std::int64_t r1, std::int64_t cols, std::size_t align) {
  const std::int64_t head = aligning_head(W, cols, align);
  with_vector_count(n, [&](auto v) ORION_AVX512 {
    rows_for_vectors<decltype(v)::value, Weight, Load>(W, x, bias, y, r0, r1, cols, head);
  });
}

// The alignments are the row kernels' (f32_rows, f16_rows), so that the heads are theirs.
ORION_AVX512 void f32_vectors(const float* W, const float* const* x, int n, const float* bias, float* const* y,
                              std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  dense_vectors<float, LoadF32>(W, x, n, bias, y, r0, r1, cols, 64);
}

ORION_AVX512 void f16_vectors(const std::uint16_t* W, const float* const* x, int n, const float* bias, float* const* y,
                              std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  dense_vectors<std::uint16_t, LoadF16>(W, x, n, bias, y, r0, r1, cols, 32);
}

}  // namespace

const RowKernels kAvx512Kernels = {f32_rows, f16_rows, f32_vectors, f16_vectors};

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
