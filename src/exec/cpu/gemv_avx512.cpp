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

}  // namespace

const RowKernels kAvx512Kernels = {f32_rows, f16_rows};

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
