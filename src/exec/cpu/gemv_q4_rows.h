#pragma once
// The row loop of the SIMD q4 kernels (gemv_q4_avx512.h, gemv_q4_avx2.h, gemv_q4_neon.h): rows
// in the order of detail::for_row_groups, each group handed to the including body's
// q4_group<R, G, P>, which must be declared before this is included (with ORION_Q4_TARGET
// defined). G is the weights' group, P how many bytes ahead of its loads the body prefetches
// each row's weights (0: none), where it does.
#include "exec/cpu/gemv_q4.h"

namespace orion::exec::cpu::detail {
namespace {

template <int G, int P>
ORION_Q4_TARGET void q4_rows_group(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                                   std::int64_t r0, std::int64_t r1) {
  const std::int64_t row_bytes = W.cols / 2, row_floats = 2 * (W.cols / G);
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q4_TARGET {
        q4_group<1, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, 1, x, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q4_TARGET {
        q4_group<4, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, stride, x, s);
      });
}

template <int P>
ORION_Q4_TARGET void q4_rows_simd(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                                  std::int64_t r0, std::int64_t r1) {
  if (W.group == 32)
    q4_rows_group<32, P>(W, x, bias, y, r0, r1);
  else if (W.group == 64)
    q4_rows_group<64, P>(W, x, bias, y, r0, r1);
  else
    q4_rows_group<128, P>(W, x, bias, y, r0, r1);
}

}  // namespace
}  // namespace orion::exec::cpu::detail
