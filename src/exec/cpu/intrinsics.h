#pragma once
// <immintrin.h> for the x86 kernels, without GCC 12's false warnings: the self-initialised
// placeholders inside its AVX-512 headers (_mm512_undefined_*) are reported as used
// uninitialised wherever they are inlined (GCC bug 105593).
#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__x86_64__)
namespace orion::exec::cpu {

// The sum of a register's eight floats, ((0+4) + (2+6)) + ((1+5) + (3+7)). AVX alone, so that
// it inlines into any kernel compiled for AVX2 or more.
__attribute__((target("avx"))) inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace orion::exec::cpu
#endif
