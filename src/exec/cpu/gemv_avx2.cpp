// f32 and f16 gemv kernels for AVX2 + FMA + F16C (8 floats per register, 16 registers); q8 is
// in gemv_q8_avx2*.cpp. Chosen at run time; nothing here runs unless isa_supported(Isa::avx2).
//
// Four rows at a time (in the order of detail::for_row_groups) share each load of x; every
// row keeps two accumulators (eight independent FMA chains cover the FMA latency). Column
// heads (to align the loads) and tails use masked loads, or a copy of the few halves, so no
// byte outside W, x or y is touched.
#include "exec/cpu/gemv.h"

#if defined(__x86_64__)

#include "exec/cpu/intrinsics.h"

#include <cstring>

#define ORION_AVX2 __attribute__((target("avx2,fma,f16c")))
// Unrolled before GCC's scalar replacement runs, so that an array of accumulators indexed by
// these loops' counters can live in registers (rolled, GCC 12 kept them on the stack).
#define ORION_UNROLL _Pragma("GCC unroll 16")
#define ORION_PASSES_TARGET ORION_AVX2
#include "exec/cpu/gemv_passes.h"

namespace orion::exec::cpu::detail {

namespace {

// The first n (0..7) lanes set.
ORION_AVX2 inline __m256i tail_mask(std::int64_t n) {
  static const std::int32_t kBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kBits + 8 - n));
}

ORION_AVX2 inline __m256 load_half8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

ORION_AVX2 inline __m256 load_half_tail(const std::uint16_t* p, std::int64_t n) {
  std::uint16_t buf[8] = {};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
  return load_half8(buf);
}

// Weights as floats: 8 at a time, or the first n (1..7) of 8 without touching the others.
struct LoadF32 {
  ORION_AVX2 __m256 operator()(const float* p) const { return _mm256_loadu_ps(p); }
  ORION_AVX2 __m256 tail(const float* p, std::int64_t n) const { return _mm256_maskload_ps(p, tail_mask(n)); }
};
struct LoadF16 {
  ORION_AVX2 __m256 operator()(const std::uint16_t* p) const { return load_half8(p); }
  ORION_AVX2 __m256 tail(const std::uint16_t* p, std::int64_t n) const { return load_half_tail(p, n); }
};

// R rows' dot products with x: the aligning head into acc[1], then steps of 16 columns (8 into
// each accumulator), one more of 8 into acc[0], and the last 1-7 columns into acc[1]. P > 0:
// each row's weights P bytes ahead are prefetched once per 64 bytes.
template <int R, int P, class Weight, class Load>
ORION_AVX2 inline void dot_group(const Weight* W, std::int64_t ld, const float* x, std::int64_t cols, std::int64_t head,
                                 float* out) {
  const Load load;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  std::int64_t c = 0;
  if (head > 0) {
    const __m256 x0 = _mm256_maskload_ps(x, tail_mask(head));
    for (int r = 0; r < R; ++r) acc[r][1] = _mm256_fmadd_ps(load.tail(W + r * ld, head), x0, acc[r][1]);
    c = head;
  }
  for (; c + 16 <= cols; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
    const bool fetch = P > 0 && ((c - head) * static_cast<std::int64_t>(sizeof(Weight))) % 64 == 0;
    for (int r = 0; r < R; ++r) {
      if (fetch) _mm_prefetch(reinterpret_cast<const char*>(W + r * ld + c) + P, _MM_HINT_T0);
      acc[r][0] = _mm256_fmadd_ps(load(W + r * ld + c), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(load(W + r * ld + c + 8), x1, acc[r][1]);
    }
  }
  if (c + 8 <= cols) {
    const __m256 x0 = _mm256_loadu_ps(x + c);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(load(W + r * ld + c), x0, acc[r][0]);
    c += 8;
  }
  if (c < cols) {
    const __m256 x0 = _mm256_maskload_ps(x + c, tail_mask(cols - c));
    for (int r = 0; r < R; ++r) acc[r][1] = _mm256_fmadd_ps(load.tail(W + r * ld + c, cols - c), x0, acc[r][1]);
  }
  for (int r = 0; r < R; ++r) out[r] = hsum8(_mm256_add_ps(acc[r][0], acc[r][1]));
}

// Loads of 8 floats (32 bytes) and of 8 halves (16 bytes) stay inside one cache line when
// aligned to their width.
template <int P, class Weight, class Load>
ORION_AVX2 void dot_rows(const Weight* W, const float* x, const float* bias, float* y, std::int64_t r0, std::int64_t r1,
                         std::int64_t cols) {
  const std::int64_t head = aligning_head(W, cols, 8 * sizeof(Weight));
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX2 { dot_group<1, P, Weight, Load>(W + r * cols, cols, x, cols, head, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX2 {
        dot_group<4, P, Weight, Load>(W + r * cols, stride * cols, x, cols, head, s);
      });
}

ORION_AVX2 void f32_rows(const float* W, const float* x, const float* bias, float* y, std::int64_t r0, std::int64_t r1,
                         std::int64_t cols) {
  dot_rows<0, float, LoadF32>(W, x, bias, y, r0, r1, cols);
}

template <int P>
ORION_AVX2 void f16_rows(const std::uint16_t* W, const float* x, const float* bias, float* y, std::int64_t r0,
                         std::int64_t r1, std::int64_t cols) {
  dot_rows<P, std::uint16_t, LoadF16>(W, x, bias, y, r0, r1, cols);
}

// One 8-column step of the batched form: acc[r][v] += W[r, c..c+8) x_v[c..c+8), or with Tail
// the first n columns only (dot_group's masked loads).
template <int R, int V, bool Tail, class Weight, class Load>
ORION_AVX2 __attribute__((always_inline)) inline void vector_step(__m256 (&acc)[R][V], const Weight* W, std::int64_t ld,
                                                                  const float* const* xs, std::int64_t c, std::int64_t n) {
  const Load load;
  __m256 xv[V];
  ORION_UNROLL
  for (int v = 0; v < V; ++v) xv[v] = Tail ? _mm256_maskload_ps(xs[v] + c, tail_mask(n)) : _mm256_loadu_ps(xs[v] + c);
  ORION_UNROLL
  for (int r = 0; r < R; ++r) {
    const __m256 w = Tail ? load.tail(W + r * ld + c, n) : load(W + r * ld + c);
    ORION_UNROLL
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(w, xv[v], acc[r][v]);
  }
}

// Accumulator U of dot_group for R rows and V vectors: every step dot_group feeds into its
// accumulator U, in the same order, into acc[r][v] for each (row, vector) pair. The first pass
// prefetches each row's next row (the next of its stream) a 64-byte line at a time.
template <int R, int V, int U, class Weight, class Load>
ORION_AVX2 __attribute__((always_inline)) inline void vector_pass(__m256 (&acc)[R][V], const Weight* W, std::int64_t ld,
                                                                  const float* const* xs, std::int64_t cols,
                                                                  std::int64_t head) {
  if (U == 1 && head > 0) vector_step<R, V, true, Weight, Load>(acc, W, ld, xs, 0, head);
  std::int64_t c = head;
  for (; c + 16 <= cols; c += 16) {
    if (U == 0 && ((c - head) * static_cast<std::int64_t>(sizeof(Weight))) % 64 == 0) {
      ORION_UNROLL
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(W + r * ld + cols + c), _MM_HINT_T0);
    }
    vector_step<R, V, false, Weight, Load>(acc, W, ld, xs, c + 8 * U, 8);
  }
  if (c + 8 <= cols) {
    if (U == 0) vector_step<R, V, false, Weight, Load>(acc, W, ld, xs, c, 8);
    c += 8;
  }
  if (U == 1 && c < cols) vector_step<R, V, true, Weight, Load>(acc, W, ld, xs, c, cols - c);
}

// dot_group<R> for V vectors: out[r * V + v], each (r, v) with exactly dot_group's arithmetic.
// The two accumulators go one after the other, each a pass over the R rows (in L1 for the second),
// so that the pairs' accumulators, x and a row's weights fit in the 16 registers.
template <int R, int V, class Weight, class Load>
ORION_AVX2 inline void vector_block(const Weight* W, std::int64_t ld, const float* const* xs, std::int64_t cols,
                                    std::int64_t head, float* out) {
  __m256 part[2][R][V];
  accumulator_passes(part, _mm256_setzero_ps(), [&](auto u, __m256(&acc)[R][V]) ORION_AVX2 {
    vector_pass<R, V, decltype(u)::value, Weight, Load>(acc, W, ld, xs, cols, head);
  });
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) out[r * V + v] = hsum8(_mm256_add_ps(part[0][r][v], part[1][r][v]));
}

// Rows a pass of V vectors takes: R * V accumulators, V registers of x and one of a row's
// weights within the 16; R + V loads for R * V multiply-adds.
template <int V>
inline constexpr int kDenseVectorRows = V == 4 ? 2 : V == 3 ? 3 : 4;

template <int V, class Weight, class Load>
ORION_AVX2 void rows_for_vectors(const Weight* W, const float* const* xs, const float* bias, float* const* y,
                                 std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  constexpr int R = kDenseVectorRows<V>;
  const std::int64_t head = aligning_head(W, cols, 8 * sizeof(Weight));
  for_vector_rows<R, V>(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX2 { vector_block<1, V, Weight, Load>(W + r * cols, cols, xs, cols, head, s); },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX2 {
        vector_block<R, V, Weight, Load>(W + r * cols, stride * cols, xs, cols, head, s);
      });
}

template <class Weight, class Load>
ORION_AVX2 void dense_vectors(const Weight* W, const float* const* x, int n, const float* bias, float* const* y,
                              std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  with_vector_count(n, [&](auto v) ORION_AVX2 { rows_for_vectors<decltype(v)::value, Weight, Load>(W, x, bias, y, r0, r1, cols); });
}

}  // namespace

const RowKernels kAvx2Kernels = {f32_rows, f16_rows<kAvx2PrefetchBytes>, dense_vectors<float, LoadF32>,
                                 dense_vectors<std::uint16_t, LoadF16>};
const RowKernels kAvx2KernelsWithoutPrefetch = {f32_rows, f16_rows<0>, nullptr, nullptr};

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
