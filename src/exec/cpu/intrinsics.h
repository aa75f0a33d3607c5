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
