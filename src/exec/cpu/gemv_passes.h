#pragma once
// The accumulator passes of the batched kernels whose R rows times V vectors cannot keep every
// accumulator of a row's numerics in registers at once (gemv_avx512.cpp, gemv_avx2.cpp,
// gemv_neon.cpp, gemv_q8_avx2.h, gemv_q4_avx2.h): each accumulator of the single-vector kernel
// is computed for every (row, vector) pair in a pass of its own over the R rows, which stay in
// L1 between passes. Every pair still gets the single vector's arithmetic: an accumulator takes
// the same columns in the same order whichever pass computes it. The including file defines
// ORION_PASSES_TARGET (its target attribute, or nothing) before including this.
#include <type_traits>
#include <utility>

#ifndef ORION_PASSES_TARGET
#define ORION_PASSES_TARGET  // the baseline ISA: a kernel file defines its own before including this
#endif

namespace orion::exec::cpu::detail {
namespace {

// part[u] = the R x V accumulators that pass(std::integral_constant<int, u>{}, acc) leaves in
// acc, each starting at `zero`, for u = 0 .. U - 1 in turn. The loops are unrolled before GCC's
// scalar replacement runs, so that acc can live in registers (rolled, GCC 12 kept it on the
// stack and stored every accumulator after each multiply-add).
template <int U, int R, int V, class Reg, class Pass>
ORION_PASSES_TARGET __attribute__((always_inline)) inline void accumulator_passes(Reg (&part)[U][R][V], Reg zero,
                                                                                  const Pass& pass) {
  const auto one = [&](auto u) __attribute__((always_inline)) ORION_PASSES_TARGET {
    Reg acc[R][V];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) acc[r][v] = zero;
    pass(u, acc);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) part[decltype(u)::value][r][v] = acc[r][v];
  };
  [&]<int... u>(std::integer_sequence<int, u...>) __attribute__((always_inline)) ORION_PASSES_TARGET {
    (one(std::integral_constant<int, u>{}), ...);
  }(std::make_integer_sequence<int, U>{});
}

}  // namespace
}  // namespace orion::exec::cpu::detail
