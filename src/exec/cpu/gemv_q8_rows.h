#pragma once
// The row loops of the SIMD q8 kernels (gemv_q8_avx512.h, gemv_q8_avx2.h, gemv_q8_neon.h): one
// vector's rows in the order of detail::for_row_groups, and the batched form's, R =
// kQ8VectorRows<NV> rows of NV vectors at a time (for_vector_rows), each group handed to the
// including body's q8_group_vectors<R, NV, B, P> (NV = 1: one vector). The body declares both
// before this is included (with ORION_Q8_TARGET defined). P is how many bytes ahead of its loads
// the body prefetches each row's weights (0: none), where it does.
#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu::detail {
namespace {

template <int B, int P>
ORION_Q8_TARGET void q8_rows_block(const Q8Weights& W, const QuantizedActivation& x,
                                   const float* bias, float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = W.cols / B;
  const QuantizedActivation* const one[1] = {&x};
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q8_TARGET {
        q8_group_vectors<1, 1, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, 1, one, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q8_TARGET {
        q8_group_vectors<4, 1, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, stride, one, s);
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

template <int NV, int B, int P>
ORION_Q8_TARGET void q8_vectors_block(const Q8Weights& W, const QuantizedActivation* const* x, const float* bias,
                                      float* const* y, std::int64_t r0, std::int64_t r1) {
  constexpr int R = kQ8VectorRows<NV>;
  const std::int64_t nb = W.cols / B;
  for_vector_rows<R, NV>(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q8_TARGET {
        q8_group_vectors<1, NV, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, 1, x, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q8_TARGET {
        q8_group_vectors<R, NV, B, P>(W.q + r * W.cols, W.scales + r * nb, W.cols, stride, x, s);
      });
}

// Up to kColumnVectors vectors a pass (detail::Q8Vectors, gemv_q8.h).
template <int P>
ORION_Q8_TARGET void q8_vectors_simd(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias,
                                     float* const* y, std::int64_t r0, std::int64_t r1) {
  with_vector_count(n, [&](auto nv) ORION_Q8_TARGET {
    constexpr int NV = decltype(nv)::value;
    if (W.block == 32)
      q8_vectors_block<NV, 32, P>(W, x, bias, y, r0, r1);
    else
      q8_vectors_block<NV, 64, P>(W, x, bias, y, r0, r1);
  });
}

}  // namespace
}  // namespace orion::exec::cpu::detail
