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

template <int R>
ORION_AVX2 inline void f32_group(const float* W, std::int64_t ld, const float* x,
                                 std::int64_t cols, std::int64_t head, float* out) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  std::int64_t c = 0;
  if (head > 0) {
    const __m256i m = tail_mask(head);
    const __m256 x0 = _mm256_maskload_ps(x, m);
    for (int r = 0; r < R; ++r)
      acc[r][1] = _mm256_fmadd_ps(_mm256_maskload_ps(W + r * ld, m), x0, acc[r][1]);
    c = head;
  }
  for (; c + 16 <= cols; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(W + r * ld + c), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(W + r * ld + c + 8), x1, acc[r][1]);
    }
  }
  if (c + 8 <= cols) {
    const __m256 x0 = _mm256_loadu_ps(x + c);
    for (int r = 0; r < R; ++r)
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(W + r * ld + c), x0, acc[r][0]);
    c += 8;
  }
  if (c < cols) {
    const __m256i m = tail_mask(cols - c);
    const __m256 x0 = _mm256_maskload_ps(x + c, m);
    for (int r = 0; r < R; ++r)
      acc[r][1] = _mm256_fmadd_ps(_mm256_maskload_ps(W + r * ld + c, m), x0, acc[r][1]);
  }
  for (int r = 0; r < R; ++r) out[r] = hsum8(_mm256_add_ps(acc[r][0], acc[r][1]));
}

// P > 0: each row's weights P bytes ahead are prefetched every other step (once per 64 bytes).
template <int R, int P>
ORION_AVX2 inline void f16_group(const std::uint16_t* W, std::int64_t ld, const float* x,
                                 std::int64_t cols, std::int64_t head, float* out) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  std::int64_t c = 0;
  if (head > 0) {
    const __m256 x0 = _mm256_maskload_ps(x, tail_mask(head));
    for (int r = 0; r < R; ++r)
      acc[r][1] = _mm256_fmadd_ps(load_half_tail(W + r * ld, head), x0, acc[r][1]);
    c = head;
  }
  for (; c + 16 <= cols; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
    const bool fetch = P > 0 && ((c - head) & 16) == 0;
    for (int r = 0; r < R; ++r) {
      if (fetch) _mm_prefetch(reinterpret_cast<const char*>(W + r * ld + c) + P, _MM_HINT_T0);
      acc[r][0] = _mm256_fmadd_ps(load_half8(W + r * ld + c), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(load_half8(W + r * ld + c + 8), x1, acc[r][1]);
    }
  }
  if (c + 8 <= cols) {
    const __m256 x0 = _mm256_loadu_ps(x + c);
    for (int r = 0; r < R; ++r)
      acc[r][0] = _mm256_fmadd_ps(load_half8(W + r * ld + c), x0, acc[r][0]);
    c += 8;
  }
  if (c < cols) {
    const __m256 x0 = _mm256_maskload_ps(x + c, tail_mask(cols - c));
    for (int r = 0; r < R; ++r)
      acc[r][1] = _mm256_fmadd_ps(load_half_tail(W + r * ld + c, cols - c), x0, acc[r][1]);
  }
  for (int r = 0; r < R; ++r) out[r] = hsum8(_mm256_add_ps(acc[r][0], acc[r][1]));
}

// Loads of 8 floats (32 bytes) and of 8 halves (16 bytes) stay inside one cache line when
// aligned to their width.
ORION_AVX2 void f32_rows(const float* W, const float* x, const float* bias, float* y,
                         std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  const std::int64_t head = aligning_head(W, cols, 32);
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX2 {
        f32_group<1>(W + r * cols, cols, x, cols, head, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX2 {
        f32_group<4>(W + r * cols, stride * cols, x, cols, head, s);
      });
}

template <int P>
ORION_AVX2 void f16_rows(const std::uint16_t* W, const float* x, const float* bias, float* y,
                         std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  const std::int64_t head = aligning_head(W, cols, 16);
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_AVX2 {
        f16_group<1, P>(W + r * cols, cols, x, cols, head, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_AVX2 {
        f16_group<4, P>(W + r * cols, stride * cols, x, cols, head, s);
      });
}

}  // namespace

const RowKernels kAvx2Kernels = {f32_rows, f16_rows<kAvx2PrefetchBytes>};
const RowKernels kAvx2KernelsWithoutPrefetch = {f32_rows, f16_rows<0>};

}  // namespace orion::exec::cpu::detail

#endif  // __x86_64__
