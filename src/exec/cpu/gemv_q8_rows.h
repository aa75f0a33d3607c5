#pragma once
// The row loop of the SIMD q8 kernels (gemv_q8_avx512.h, gemv_q8_avx2.h): rows in the order of
// detail::for_row_groups, each group handed to the including body's q8_group<R, B, P>, which
// must be declared before this is included (with ORION_Q8_TARGET defined). P is how many bytes
// ahead of its loads the body prefetches each row's weights (0: none), where it does.
#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu::detail {
namespace {

template <int B, int P>
ORION_Q8_TARGET void q8_rows_block(const Q8Weights& W, const QuantizedActivation& x,
                                   const float* bias, float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = W.cols / B;
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q8_TARGET {
        q8_group<1, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, 1, x, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q8_TARGET {
        q8_group<4, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, stride, x, s);
      });
}

template <int P>
ORION_Q8_TARGET void q8_rows_simd(const Q8Weights& W, const QuantizedActivation& x,
                                  const float* bias, float* y, std::int64_t r0, std::int64_t r1) {
  if (W.block == 32)
    q8_rows_block<32, P>(W, x, bias, y, r0, r1);
  else
    q8_rows_block<64, P>(W, x, bias, y, r0, r1);
}

}  // namespace
}  // namespace orion::exec::cpu::detail
