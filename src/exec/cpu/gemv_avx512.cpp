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

#include <type_traits>

#include "exec/cpu/intrinsics.h"

#define ORION_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

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

// dot_group<R, float, LoadF32> for V vectors at once: out[r][v] = dot(W row r, x_v) with, for
// every (r, v), exactly dot_group's arithmetic (the same four accumulators fed in the same
// order, the same head and tail masks, the same final sums), so that a vector's result is the
// same bits as gemv_f32's. Each load of W serves V vectors, which is what makes many vectors
// cheaper than V gemvs (the rows are then read from L2, not memory, but L2 is the limit).
template <int R, int V>
ORION_AVX512 inline void dot_block(const float* W, std::int64_t ld, const float* const* xs, std::int64_t cols,
                                   std::int64_t head, float* out, std::int64_t ldo) {
  __m512 acc[R][V][4];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      for (int u = 0; u < 4; ++u) acc[r][v][u] = _mm512_setzero_ps();
  // Accumulator u as a constant (std::integral_constant), so that acc stays in registers.
  const auto step = [&](std::int64_t c, __mmask16 m, auto u_const) ORION_AVX512 {
    constexpr int u = decltype(u_const)::value;
    __m512 xv[V];
    for (int v = 0; v < V; ++v) xv[v] = _mm512_maskz_loadu_ps(m, xs[v] + c);
    for (int r = 0; r < R; ++r) {
      const __m512 w = _mm512_maskz_loadu_ps(m, W + r * ld + c);
      for (int v = 0; v < V; ++v) acc[r][v][u] = _mm512_fmadd_ps(w, xv[v], acc[r][v][u]);
    }
  };
  using U0 = std::integral_constant<int, 0>;
  using U1 = std::integral_constant<int, 1>;
  using U2 = std::integral_constant<int, 2>;
  using U3 = std::integral_constant<int, 3>;
  std::int64_t c = 0;
  if (head > 0) {
    step(0, tail_mask(head), U3{});
    c = head;
  }
  for (; c + 64 <= cols; c += 64) {
    step(c, 0xffff, U0{});
    step(c + 16, 0xffff, U1{});
    step(c + 32, 0xffff, U2{});
    step(c + 48, 0xffff, U3{});
  }
  // At most three whole registers are left: accumulators 0, 1 and 2, as dot_group feeds them.
  if (c + 16 <= cols) {
    step(c, 0xffff, U0{});
    c += 16;
  }
  if (c + 16 <= cols) {
    step(c, 0xffff, U1{});
    c += 16;
  }
  if (c + 16 <= cols) {
    step(c, 0xffff, U2{});
    c += 16;
  }
  if (c < cols) step(c, tail_mask(cols - c), U3{});
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      out[v * ldo + r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[r][v][0], acc[r][v][1]),
                                                            _mm512_add_ps(acc[r][v][2], acc[r][v][3])));
}

// Rows [r0, r1) of Y[v] = W X[v] for n vectors (rows of X `cols` apart, of Y `rows` apart):
// two rows by three vectors at a time (24 accumulators of the 32 registers).
template <int V>
ORION_AVX512 void rows_for_vectors(const float* W, const float* const* xs, float* Y, std::int64_t ldy, std::int64_t r0,
                                   std::int64_t r1, std::int64_t cols, std::int64_t head) {
  std::int64_t r = r0;
  for (; r + 2 <= r1; r += 2) dot_block<2, V>(W + r * cols, cols, xs, cols, head, Y + r, ldy);
  if (r < r1) dot_block<1, V>(W + r * cols, cols, xs, cols, head, Y + r, ldy);
}

ORION_AVX512 void f32_columns(const float* W, const float* X, float* Y, std::int64_t rows, std::int64_t r0,
                              std::int64_t r1, std::int64_t cols, std::int64_t n) {
  const std::int64_t head = aligning_head(W, cols, 64);
  std::int64_t j = 0;
  for (; j + 3 <= n; j += 3) {
    const float* xs[3] = {X + j * cols, X + (j + 1) * cols, X + (j + 2) * cols};
    rows_for_vectors<3>(W, xs, Y + j * rows, rows, r0, r1, cols, head);
  }
  for (; j < n; ++j) {
    const float* xs[1] = {X + j * cols};
    rows_for_vectors<1>(W, xs, Y + j * rows, rows, r0, r1, cols, head);
  }
}

}  // namespace

const RowKernels kAvx512Kernels = {f32_rows, f16_rows};
const ColumnsKernel kAvx512F32Columns = f32_columns;

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
