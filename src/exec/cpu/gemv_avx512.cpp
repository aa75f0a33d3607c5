// gemv kernels for AVX-512 F/BW/VL + FMA + F16C (16 floats per register, 32 registers).
// Chosen at run time; nothing here runs unless isa_supported(Isa::avx512). No VNNI: the q8
// kernel converts int8 to f32 (see gemv.h), so CPUs with AVX-512 but without VNNI run it too.
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

ORION_AVX512 inline __m512 load_q8x16(const std::int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
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

// The partial dot product of one block of B weights (32 or 64) at q with x. Written as
// explicit FMAs with nothing left for the compiler to contract, so every row gets the same
// operations wherever it is computed.
template <int B>
ORION_AVX512 inline __m512 q8_block(const std::int8_t* q, const float* x) {
  __m512 p = _mm512_mul_ps(load_q8x16(q), _mm512_loadu_ps(x));
  p = _mm512_fmadd_ps(load_q8x16(q + 16), _mm512_loadu_ps(x + 16), p);
  if constexpr (B == 64) {
    __m512 p2 = _mm512_mul_ps(load_q8x16(q + 32), _mm512_loadu_ps(x + 32));
    p2 = _mm512_fmadd_ps(load_q8x16(q + 48), _mm512_loadu_ps(x + 48), p2);
    p = _mm512_add_ps(p, p2);
  }
  return p;
}

// Per row, each block's partial dot product times the block's scale goes into one of two
// accumulators (even and odd blocks). Row k of the group is `stride` rows below row 0.
template <int R, int B>
ORION_AVX512 inline void q8_group(const std::int8_t* q, const float* scales, std::int64_t cols,
                                  std::int64_t stride, const float* x, float* out) {
  const std::int64_t nb = cols / B;
  __m512 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 2 <= nb; b += 2)
    for (int r = 0; r < R; ++r) {
      const std::int8_t* row = q + r * stride * cols + b * B;
      const float* s = scales + r * stride * nb + b;
      acc0[r] = _mm512_fmadd_ps(q8_block<B>(row, x + b * B), _mm512_set1_ps(s[0]), acc0[r]);
      acc1[r] = _mm512_fmadd_ps(q8_block<B>(row + B, x + b * B + B), _mm512_set1_ps(s[1]),
                                acc1[r]);
    }
  if (b < nb)
    for (int r = 0; r < R; ++r)
      acc0[r] = _mm512_fmadd_ps(q8_block<B>(q + r * stride * cols + b * B, x + b * B),
                                _mm512_set1_ps(scales[r * stride * nb + b]), acc0[r]);
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r], acc1[r]));
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

template <int B>
ORION_AVX512 void q8_rows_block(const Q8Weights& W, const float* x, const float* bias, float* y,
                                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = W.cols / B;
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX512 {
        q8_group<1, B>(W.q + r * W.cols, W.scales + r * nb, W.cols, 1, x, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX512 {
        q8_group<4, B>(W.q + r * W.cols, W.scales + r * nb, W.cols, stride, x, s);
      });
}

void q8_rows(const Q8Weights& W, const float* x, const float* bias, float* y, std::int64_t r0,
             std::int64_t r1) {
  if (W.block == 32)
    q8_rows_block<32>(W, x, bias, y, r0, r1);
  else
    q8_rows_block<64>(W, x, bias, y, r0, r1);
}

}  // namespace

const RowKernels kAvx512Kernels = {f32_rows, f16_rows, q8_rows};

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
