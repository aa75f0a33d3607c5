#pragma once
// The row loops of the SIMD q4 kernels (gemv_q4_avx512.h, gemv_q4_avx2.h, gemv_q4_neon.h): one
// vector's rows in the order of detail::for_row_groups, and the batched form's, R =
// kQ4VectorRows<NV> rows of NV vectors at a time (for_vector_rows), each group handed to the
// including body's q4_group_vectors<R, NV, G, P> (NV = 1: one vector). The body declares both
// before this is included (with ORION_Q4_TARGET defined). G is the weights' group, P how many
// bytes ahead of its loads the body prefetches each row's weights (0: none), where it does.
#include "exec/cpu/gemv_q4.h"

namespace orion::exec::cpu::detail {
namespace {

template <int G, int P>
ORION_Q4_TARGET void q4_rows_group(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                                   std::int64_t r0, std::int64_t r1) {
  const std::int64_t row_bytes = W.cols / 2, row_floats = 2 * (W.cols / G);
  const Q4Activation* const one[1] = {&x};
  for_row_groups(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q4_TARGET {
        q4_group_vectors<1, 1, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, 1, one, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q4_TARGET {
        q4_group_vectors<4, 1, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, stride, one, s);
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

template <int NV, int G, int P>
ORION_Q4_TARGET void q4_vectors_group(const Q4Weights& W, const Q4Activation* const* x, const float* bias,
                                      float* const* y, std::int64_t r0, std::int64_t r1) {
  constexpr int R = kQ4VectorRows<NV>;
  const std::int64_t row_bytes = W.cols / 2, row_floats = 2 * (W.cols / G);
  for_vector_rows<R, NV>(
      r0, r1, bias, y,
      [&](std::int64_t r, float* s) ORION_Q4_TARGET {
        q4_group_vectors<1, NV, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, 1, x, s);
      },
      [&](std::int64_t r, std::int64_t stride, float* s) ORION_Q4_TARGET {
        q4_group_vectors<R, NV, G, P>(W.q + r * row_bytes, W.scale_bias + r * row_floats, W.cols, stride, x, s);
      });
}

// Up to kColumnVectors vectors a pass (detail::Q4Vectors, gemv_q4.h).
template <int P>
ORION_Q4_TARGET void q4_vectors_simd(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias,
                                     float* const* y, std::int64_t r0, std::int64_t r1) {
  with_vector_count(n, [&](auto nv) ORION_Q4_TARGET {
    constexpr int NV = decltype(nv)::value;
    if (W.group == 32)
      q4_vectors_group<NV, 32, P>(W, x, bias, y, r0, r1);
    else if (W.group == 64)
      q4_vectors_group<NV, 64, P>(W, x, bias, y, r0, r1);
    else
      q4_vectors_group<NV, 128, P>(W, x, bias, y, r0, r1);
  });
}

}  // namespace
}  // namespace orion::exec::cpu::detail
