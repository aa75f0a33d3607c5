#pragma once
// Shared by the MIL tests: small graphs in ANE form (one per mapped op), seeded inputs, and
// running a graph on the CPU executor in f16 numerics.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "exec/cpu/executor.h"
#include "ir/builder.h"
#include "error_of.h"

namespace orion::compile::testing {

using ir::Builder;
using ir::Op;
using ir::Value;

using orion::testing::error_of;

// An fp16 tensor of seeded values in [lo, hi).
inline Tensor random_f16(Rng& rng, Shape shape, float lo, float hi) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  rng.fill_uniform(v, lo, hi);
  return Tensor::from_floats(std::move(shape), v).to(DType::f16);
}

// A graph in ANE form using `op`, with attributes away from their defaults where the op has
// them; nullopt for ops without a MIL form. The switch has no default, so a new op makes the
// compiler warn here.
inline std::optional<ir::Graph> ane_graph_using(Op op) {
  Builder b("main");
  const DType h = DType::f16;
  Rng rng(static_cast<std::uint64_t>(op) + 1);
  switch (op) {
    case Op::input: case Op::param: case Op::neg: case Op::gelu: case Op::silu: case Op::layer_norm:
    case Op::rms_norm: case Op::gather: case Op::scatter_add: case Op::broadcast_to:
    case Op::softmax_cross_entropy: case Op::softmax_cross_entropy_grad: case Op::count_:
    case Op::dequantize_affine:  // rewritten as dequantize before MIL (compile/passes/affine_weights.h)
      return std::nullopt;
    case Op::constant: {
      // Inline and blob consts, a scalar, int32 and bool consts feeding a select.
      const Value x = b.input("x", h, {1, 4, 1, 32});
      const Value big = b.name(b.constant(random_f16(rng, {1, 4, 1, 32}, -2, 2)), "big");
      const Value s = b.name(b.constant(Tensor::scalar(0.375f).to(h)), "s");
      Tensor cond(DType::boolean, {1, 1, 1, 32});
      for (int i = 0; i < 32; ++i) cond.data<std::uint8_t>()[i] = i % 3 == 0;
      const Value c = b.name(b.constant(cond), "cond");
      b.output(b.name(b.where(c, b.mul(b.add(x, big), s), x), "y"));
      return b.finish();
    }
    case Op::matmul: {
      const Value q = b.input("q", h, {1, 2, 8, 4});
      const Value k = b.input("k", h, {1, 2, 8, 4});
      b.output(b.name(b.matmul(q, k, false, true), "scores"));
      b.output(b.name(b.matmul(k, q, true, false), "gram"));
      return b.finish();
    }
    case Op::dequantize: {
      // int8 weights with per-row scales into a conv, as constexpr_blockwise_shift_scale.
      const Value x = b.input("x", h, {1, 8, 1, 32});
      Tensor q(DType::i8, {12, 8, 1, 1});
      for (std::int64_t i = 0; i < q.numel(); ++i) q.data<std::int8_t>()[i] = static_cast<std::int8_t>((i * 37) % 255 - 127);
      const Value wq = b.name(b.constant(q), "wq");
      const Value sc = b.name(b.constant(random_f16(rng, {12, 1, 1, 1}, 0.001f, 0.01f)), "sc");
      b.output(b.name(b.conv(x, b.name(b.op(Op::dequantize, {wq, sc}), "w")), "y"));
      return b.finish();
    }
    case Op::quantize: {
      // W8A8: an activation quantized and dequantized with a scalar scale and zero point.
      const Value x = b.input("x", h, {1, 4, 1, 32});
      const Value sc = b.name(b.constant(Tensor::scalar(0.03125f).to(h)), "sc");
      Tensor zero(DType::i8, {});
      zero.data<std::int8_t>()[0] = 3;
      const Value zp = b.name(b.constant(zero), "zp");
      const Value q = b.name(b.op(Op::quantize, {x, sc, zp}, {{"dtype", DType::i8}}), "q");
      b.output(b.name(b.op(Op::dequantize, {q, sc, zp}), "y"));
      return b.finish();
    }
    case Op::conv: {
      const Value x = b.input("x", h, {1, 8, 1, 32});
      const Value w = b.name(b.constant(random_f16(rng, {12, 8, 1, 1}, -1, 1)), "w");
      const Value y = b.name(b.conv(x, w), "y");
      const Value w2 = b.name(b.constant(random_f16(rng, {6, 4, 1, 3}, -1, 1)), "w2");
      b.output(b.name(b.conv(y, w2, {1, 2}, {0, 0, 2, 1}, {1, 2}, 3), "z"));
      return b.finish();
    }
    case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::pow: {
      const Value x = b.input("x", h, {1, 4, 1, 16});
      const Value y = b.input("y", h, {1, 1, 1, 16});
      b.output(b.name(b.op(op, {x, y}), "out"));
      return b.finish();
    }
    case Op::exp: case Op::log: case Op::sqrt: case Op::rsqrt: case Op::tanh: case Op::sigmoid: case Op::relu:
      b.output(b.name(b.op(op, {b.input("x", h, {1, 4, 1, 16})}), "out"));
      return b.finish();
    case Op::softmax:
      b.output(b.name(b.softmax(b.input("x", h, {1, 4, 1, 16}), 1), "out"));
      return b.finish();
    case Op::reduce_sum: case Op::reduce_mean: case Op::reduce_max: {
      const Value x = b.input("x", h, {1, 4, 2, 16});
      b.output(b.name(b.op(op, {x}, {{"axes", std::vector<std::int64_t>{1, -2}}, {"keep_dims", true}}), "kept"));
      b.output(b.name(b.op(op, {x}, {{"axes", std::vector<std::int64_t>{3}}}), "dropped"));
      return b.finish();
    }
    case Op::reshape:
      b.output(b.name(b.reshape(b.input("x", h, {1, 4, 1, 16}), {1, 2, -1, 16}), "out"));
      return b.finish();
    case Op::transpose:
      b.output(b.name(b.transpose(b.input("x", h, {1, 4, 2, 16}), {0, 1, 3, 2}), "out"));
      return b.finish();
    case Op::slice:
      b.output(b.name(b.slice(b.input("x", h, {1, 8, 1, 32}), {0, 2, 0, 3}, {1, 7, 1, 32}), "out"));
      return b.finish();
    case Op::concat: {
      const Value a = b.input("a", h, {1, 2, 1, 16});
      const Value c = b.input("c", h, {1, 3, 1, 16});
      b.output(b.name(b.concat({a, c, a}, 1), "out"));
      return b.finish();
    }
    case Op::cast: {
      const Value x = b.input("x", DType::f32, {1, 4, 1, 16});
      const Value y = b.name(b.cast(x, h), "half");
      b.output(b.name(b.cast(b.exp(y), DType::f32), "out"));
      return b.finish();
    }
    case Op::clamp:
      b.output(b.name(b.clamp(b.input("x", h, {1, 4, 1, 16}), -0.75, 1.5), "out"));
      return b.finish();
    case Op::where: {
      const Value c = b.input("cond", DType::boolean, {1, 1, 1, 16});
      b.output(b.name(b.where(c, b.input("a", h, {1, 4, 1, 16}), b.input("b", h, {1, 4, 1, 1})), "out"));
      return b.finish();
    }
  }
  return std::nullopt;
}

// Seeded bindings for every input of `g`: floats in [0.25, 2) (inside every op's domain),
// bools alternating.
inline TensorMap random_inputs(const ir::Graph& g, std::uint64_t seed) {
  Rng rng(seed);
  TensorMap bind;
  for (ir::ValueId id : g.nodes_of(Op::input)) {
    const ir::Node& n = g.node(id);
    if (n.type.dtype == DType::boolean) {
      Tensor t(DType::boolean, n.type.shape);
      for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::uint8_t>()[i] = rng.below(2) != 0;
      bind[n.name] = t;
    } else {
      std::vector<float> v(static_cast<std::size_t>(n.type.numel()));
      rng.fill_uniform(v, 0.25f, 2.0f);
      bind[n.name] = Tensor::from_floats(n.type.shape, v);
    }
  }
  return bind;
}

inline std::vector<Tensor> run_f16(ir::Graph g, const TensorMap& bind) {
  exec::CpuExecutor ex(std::move(g), {exec::Numerics::f16, 1});
  return ex.run(bind);
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

}  // namespace orion::compile::testing
