// Elementwise kernels: binary arithmetic (numpy broadcasting), unary functions, clamp, where.
#include <cmath>
#include <string>

#include "exec/cpu/kernels.h"
#include "exec/cpu/activation.h"
#include "exec/cpu/kernels/common.h"

namespace orion::exec::cpu::kernels {

namespace {

using detail::broadcast_strides;
using detail::grain_for;
using detail::StridedIter;

// out = f(x, y) with numpy broadcasting. The inner loop is specialised on whether each operand
// moves along a row (stride 1) or is broadcast along it (stride 0), so that it vectorises.
template <class F>
void binary_loop(const KernelArgs& a, F f) {
  float* out = a.output.data<float>();
  if (a.output.numel() == 0) return;
  const Tensor& tx = a.inputs[0];
  const Tensor& ty = a.inputs[1];
  const float* x = tx.data<float>();
  const float* y = ty.data<float>();
  const Shape& os = a.output.shape();
  const StridedIter<2> it(os, {broadcast_strides(tx.shape(), os), broadcast_strides(ty.shape(), os)});
  const std::int64_t inner = it.inner();
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const std::int64_t sx = it.inner_strides()[0];
  const std::int64_t sy = it.inner_strides()[1];
  a.pool.parallel_for(0, it.rows(), grain_for(inner), [&](std::int64_t lo, std::int64_t hi) {
    it.for_rows(lo, hi, [&](std::int64_t row, const std::array<std::int64_t, 2>& off) {
      const float* xp = x + off[0];
      const float* yp = y + off[1];
      float* o = out + row * inner;
      if (sx != 0 && sy != 0) {
        for (std::int64_t i = 0; i < inner; ++i) o[i] = f(xp[i], yp[i]);
      } else if (sx != 0) {
        const float yv = *yp;
        for (std::int64_t i = 0; i < inner; ++i) o[i] = f(xp[i], yv);
      } else if (sy != 0) {
        const float xv = *xp;
        for (std::int64_t i = 0; i < inner; ++i) o[i] = f(xv, yp[i]);
      } else {
        const float v = f(*xp, *yp);
        for (std::int64_t i = 0; i < inner; ++i) o[i] = v;
      }
    });
  });
}

// out = f(x) over contiguous tensors of the same shape.
template <class F>
void unary_loop(const KernelArgs& a, F f) {
  const float* x = a.inputs[0].data<float>();
  float* out = a.output.data<float>();
  a.pool.parallel_for(0, a.output.numel(), grain_for(1), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) out[i] = f(x[i]);
  });
}

}  // namespace

void binary(const KernelArgs& a) {
  switch (a.node.op) {
    case ir::Op::add: return binary_loop(a, [](float p, float q) { return p + q; });
    case ir::Op::sub: return binary_loop(a, [](float p, float q) { return p - q; });
    case ir::Op::mul: return binary_loop(a, [](float p, float q) { return p * q; });
    case ir::Op::div: return binary_loop(a, [](float p, float q) { return p / q; });
    case ir::Op::pow: return binary_loop(a, [](float p, float q) { return std::pow(p, q); });
    default: break;
  }
  throw Error(ir::describe(a.node) + ": not a binary op");
}

void unary(const KernelArgs& a) {
  switch (a.node.op) {
    case ir::Op::neg: return unary_loop(a, [](float v) { return -v; });
    case ir::Op::exp: return unary_loop(a, [](float v) { return std::exp(v); });
    case ir::Op::log: return unary_loop(a, [](float v) { return std::log(v); });
    case ir::Op::sqrt: return unary_loop(a, [](float v) { return std::sqrt(v); });
    case ir::Op::rsqrt: return unary_loop(a, [](float v) { return 1.0f / std::sqrt(v); });
    case ir::Op::tanh: return unary_loop(a, [](float v) { return std::tanh(v); });
    case ir::Op::sigmoid: return unary_loop(a, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    // NaN stays NaN (a comparison with NaN is false).
    case ir::Op::relu: return unary_loop(a, [](float v) { return v < 0.0f ? 0.0f : v; });
    case ir::Op::gelu: return unary_loop(a, [](float v) { return gelu_tanh(v); });
    case ir::Op::silu: return unary_loop(a, [](float v) { return v / (1.0f + std::exp(-v)); });
    default: break;
  }
  throw Error(ir::describe(a.node) + ": not a unary op");
}

void clamp(const KernelArgs& a) {
  const auto lo = static_cast<float>(a.node.attr_real("min"));
  const auto hi = static_cast<float>(a.node.attr_real("max"));
  // NaN stays NaN.
  unary_loop(a, [lo, hi](float v) { return v < lo ? lo : (v > hi ? hi : v); });
}

void where(const KernelArgs& a) {
  if (a.output.numel() == 0) return;
  const Tensor& tc = a.inputs[0];
  const Tensor& ta = a.inputs[1];
  const Tensor& tb = a.inputs[2];
  const Shape& os = a.output.shape();
  const StridedIter<3> it(os, {broadcast_strides(tc.shape(), os), broadcast_strides(ta.shape(), os),
                               broadcast_strides(tb.shape(), os)});
  const std::int64_t inner = it.inner();
  const std::int64_t sc = it.inner_strides()[0];
  const std::int64_t sa = it.inner_strides()[1];
  const std::int64_t sb = it.inner_strides()[2];
  const std::uint8_t* cond = tc.data<std::uint8_t>();
  detail::visit_storage(a.output.dtype(), [&]<class T>(T) {
    const T* pa = ta.data<T>();
    const T* pb = tb.data<T>();
    T* out = a.output.data<T>();
    a.pool.parallel_for(0, it.rows(), grain_for(inner), [&](std::int64_t lo, std::int64_t hi) {
      it.for_rows(lo, hi, [&](std::int64_t row, const std::array<std::int64_t, 3>& off) {
        const std::uint8_t* c = cond + off[0];
        const T* ap = pa + off[1];
        const T* bp = pb + off[2];
        T* o = out + row * inner;
        for (std::int64_t i = 0; i < inner; ++i) o[i] = c[i * sc] ? ap[i * sa] : bp[i * sb];
      });
    });
  });
}

}  // namespace orion::exec::cpu::kernels
