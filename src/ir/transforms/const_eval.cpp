#include "ir/transforms/const_eval.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "ir/type_rules.h"

namespace orion::ir {

namespace {

// The op table's tanh approximation, written as x / (1 + e^(-2u)) like the CPU executor
// (0.5 (1 + tanh u) is sigmoid(2u); 1 + tanh u cancels most of its digits for negative x).
float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}

float unary(ir::Op op, float v) {
  switch (op) {
    case ir::Op::neg: return -v;
    case ir::Op::exp: return std::exp(v);
    case ir::Op::log: return std::log(v);
    case ir::Op::sqrt: return std::sqrt(v);
    case ir::Op::rsqrt: return 1.0f / std::sqrt(v);
    case ir::Op::tanh: return std::tanh(v);
    case ir::Op::sigmoid: return 1.0f / (1.0f + std::exp(-v));
    case ir::Op::relu: return v > 0 ? v : (v == v ? 0.0f : v);
    case ir::Op::gelu: return gelu_tanh(v);
    case ir::Op::silu: return v / (1.0f + std::exp(-v));
    default: break;
  }
  throw Error("const_eval: not a unary op");
}

float binary(ir::Op op, float a, float b) {
  switch (op) {
    case ir::Op::add: return a + b;
    case ir::Op::sub: return a - b;
    case ir::Op::mul: return a * b;
    case ir::Op::div: return a / b;
    case ir::Op::pow: return std::pow(a, b);
    default: break;
  }
  throw Error("const_eval: not a binary op");
}

// Floats of an f32 result, stored in `dtype` (rounded to nearest even for f16 and bf16).
Tensor store(DType dtype, const Shape& shape, std::vector<float> values) {
  Tensor t = Tensor::from_floats(shape, values);
  return dtype == DType::f32 ? t : t.to(dtype);
}

// Element offsets of `in` read for each element of the broadcast output `out`.
std::vector<std::int64_t> broadcast_offsets(const Shape& in, const Shape& out) {
  const std::size_t r = out.size();
  Shape strides(r, 0);
  std::int64_t s = 1;
  for (std::size_t i = in.size(); i-- > 0;) {
    const std::size_t o = i + (r - in.size());
    strides[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  const std::int64_t n = shape_numel(out);
  std::vector<std::int64_t> offs(static_cast<std::size_t>(n));
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t off = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    offs[static_cast<std::size_t>(k)] = off;
    for (std::size_t d = r; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < out[d]) break;
      off -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
  return offs;
}

Tensor concat(const ir::Node& n, std::span<const Tensor> in) {
  const Shape& out_shape = n.type.shape;
  const auto axis = static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), n.type.rank()));
  Tensor out(n.type.dtype, out_shape);
  const std::size_t es = dtype_size(n.type.dtype);
  std::int64_t outer = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= out_shape[d];
  std::int64_t inner = 1;
  for (std::size_t d = axis + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  const auto out_row = static_cast<std::size_t>(out_shape[axis] * inner) * es;
  std::size_t col = 0;
  for (const Tensor& t : in) {
    const Tensor c = t.contiguous();
    const auto row = static_cast<std::size_t>(t.shape()[axis] * inner) * es;
    for (std::int64_t o = 0; o < outer; ++o)
      if (row) std::memcpy(out.raw() + static_cast<std::size_t>(o) * out_row + col,
                           c.raw() + static_cast<std::size_t>(o) * row, row);
    col += row;
  }
  return out;
}

// Integer to integer cast, saturating (through float would lose bits beyond 2^24).
Tensor cast_int(const Tensor& in, DType to) {
  const Tensor c = in.contiguous();
  Tensor out(to, in.shape());
  const auto n = static_cast<std::size_t>(in.numel());
  auto read = [&](std::size_t i) -> std::int64_t {
    switch (c.dtype()) {
      case DType::i32: return c.data<std::int32_t>()[i];
      case DType::i8: return c.data<std::int8_t>()[i];
      default: return c.data<std::uint8_t>()[i];
    }
  };
  auto clampi = [](std::int64_t v, std::int64_t lo, std::int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t v = read(i);
    switch (to) {
      case DType::i32: out.data<std::int32_t>()[i] = static_cast<std::int32_t>(clampi(v, INT32_MIN, INT32_MAX)); break;
      case DType::i8: out.data<std::int8_t>()[i] = static_cast<std::int8_t>(clampi(v, -128, 127)); break;
      default: out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(clampi(v, 0, 255)); break;
    }
  }
  return out;
}

}  // namespace

bool can_evaluate(ir::Op op) {
  switch (op) {
    case ir::Op::add: case ir::Op::sub: case ir::Op::mul: case ir::Op::div: case ir::Op::pow:
    case ir::Op::neg: case ir::Op::exp: case ir::Op::log: case ir::Op::sqrt: case ir::Op::rsqrt:
    case ir::Op::tanh: case ir::Op::sigmoid: case ir::Op::relu: case ir::Op::gelu: case ir::Op::silu:
    case ir::Op::reshape: case ir::Op::transpose: case ir::Op::slice: case ir::Op::concat:
    case ir::Op::cast: case ir::Op::clamp:
      return true;
    default:
      return false;
  }
}

std::optional<Tensor> evaluate(const ir::Node& n, std::span<const Tensor> in) {
  const DType dt = n.type.dtype;
  const Shape& shape = n.type.shape;
  switch (n.info().cls) {
    case ir::OpClass::binary: {
      if (!can_evaluate(n.op)) return std::nullopt;
      const std::vector<float> a = in[0].to_floats(), b = in[1].to_floats();
      const auto oa = broadcast_offsets(in[0].shape(), shape);
      const auto ob = broadcast_offsets(in[1].shape(), shape);
      std::vector<float> out(oa.size());
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = binary(n.op, a[static_cast<std::size_t>(oa[i])], b[static_cast<std::size_t>(ob[i])]);
      return store(dt, shape, std::move(out));
    }
    case ir::OpClass::unary: {
      if (!can_evaluate(n.op)) return std::nullopt;
      std::vector<float> v = in[0].to_floats();
      for (float& x : v) x = unary(n.op, x);
      return store(dt, shape, std::move(v));
    }
    default:
      break;
  }
  switch (n.op) {
    case ir::Op::reshape:
      return in[0].contiguous().clone().reshape(shape);
    case ir::Op::transpose: {
      std::vector<int> perm;
      for (std::int64_t p : n.attr_ints("perm")) perm.push_back(static_cast<int>(p));
      return in[0].permute(perm).clone();
    }
    case ir::Op::slice: {
      const auto& begin = n.attr_ints("begin");
      const auto& end = n.attr_ints("end");
      Tensor t = in[0];
      for (std::size_t d = 0; d < begin.size(); ++d) t = t.slice(static_cast<int>(d), begin[d], end[d]);
      return t.clone();
    }
    case ir::Op::concat:
      return concat(n, in);
    case ir::Op::cast:
      if (is_integer(in[0].dtype()) && is_integer(dt)) return cast_int(in[0], dt);
      return in[0].to(dt);
    case ir::Op::clamp: {
      const auto lo = static_cast<float>(n.attr_real("min"));
      const auto hi = static_cast<float>(n.attr_real("max"));
      std::vector<float> v = in[0].to_floats();
      for (float& x : v) x = x < lo ? lo : x > hi ? hi : x;  // NaN compares false: stays NaN
      return store(dt, shape, std::move(v));
    }
    default:
      return std::nullopt;
  }
}

}  // namespace orion::ir
