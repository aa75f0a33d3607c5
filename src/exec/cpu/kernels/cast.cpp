// cast: conversion between compute dtypes (f32 for every float dtype, i32, i8, u8, bool).
//
// Rules:
//  - to a float dtype: the value as a float (an i32 beyond 2^24 rounds to the nearest float);
//    the executor then rounds it to the target's precision (f16, bf16).
//  - float to i32/i8/u8: truncation toward zero, saturating at the target's range; NaN gives 0.
//    (The same rule as Tensor::to.)
//  - integer to integer: saturating at the target's range.
//  - to bool: x != 0 (so NaN is true); bool is stored as u8 0 or 1.
//  - from bool: 0 or 1.
#include <cmath>
#include <limits>
#include <type_traits>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"

namespace orion::exec::cpu::kernels {

namespace {

template <class To, class From> To convert(From v) {
  if constexpr (std::is_same_v<To, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<From, float>) {
    if (std::isnan(v)) return 0;
    // The bounds as floats: min() is a power of two (or 0) and so exact; max() + 1 too, and
    // every float below it truncates to at most max().
    constexpr float lo = static_cast<float>(std::numeric_limits<To>::min());
    constexpr float hi = static_cast<float>(std::numeric_limits<To>::max() / 2 + 1) * 2.0f;
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    const auto w = static_cast<std::int64_t>(v);
    if (w < std::numeric_limits<To>::min()) return std::numeric_limits<To>::min();
    if (w > std::numeric_limits<To>::max()) return std::numeric_limits<To>::max();
    return static_cast<To>(w);
  }
}

}  // namespace

void cast(const KernelArgs& a) {
  const Tensor& in = a.inputs[0];
  const std::int64_t n = in.numel();
  const bool to_bool = a.output.dtype() == DType::boolean;
  // A bool holding another byte than 0 or 1 (a caller's tensor) still means true.
  const bool from_bool = in.dtype() == DType::boolean;
  detail::visit_storage(in.dtype(), [&]<class From>(From) {
    const From* src = in.data<From>();
    detail::visit_storage(a.output.dtype(), [&]<class To>(To) {
      To* dst = a.output.data<To>();
      a.pool.parallel_for(0, n, detail::grain_for(1), [&](std::int64_t lo, std::int64_t hi) {
        if (to_bool || from_bool) {
          for (std::int64_t i = lo; i < hi; ++i) dst[i] = static_cast<To>(src[i] != 0 ? 1 : 0);
        } else {
          for (std::int64_t i = lo; i < hi; ++i) dst[i] = convert<To>(src[i]);
        }
      });
    });
  });
}

}  // namespace orion::exec::cpu::kernels
