#pragma once
// Small valid graphs for the IR tests: one per op of the op table.
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace orion::ir::testing {

// A small valid graph using `op`, every optional attribute set to a value other than its
// default; nullopt for an op this function does not know yet (the switch has no default, so
// the compiler also warns about a new op).
inline std::optional<Graph> graph_using(Op op) {
  Builder b("uses_" + std::string(op_info(op).name));
  const DType f32 = DType::f32;
  switch (op) {
    case Op::input:
      b.output(b.input("x.in", DType::i8, {2, 3}));
      b.output(b.input("flag", DType::boolean, {}));
      return b.finish();
    case Op::param:
      b.push_scope("layer0");
      b.output(b.param("w", DType::bf16, {4}));
      b.output(b.param("bias", DType::u8, {0, 3}));
      return b.finish();
    case Op::constant:
      b.output(b.constant(Tensor::from_floats({2, 2}, std::vector<float>{1.5f, -2, 0, 3})));
      b.output(b.constant(Tensor::from_ints({3}, std::vector<std::int32_t>{7, -8, 9})));
      return b.finish();
    case Op::matmul: {
      // x^T @ y^T with a broadcast batch: [5, 3, 2]^T x [4, 3]^T = [5, 2, 4].
      const Value x = b.input("x", f32, {5, 3, 2});
      const Value y = b.input("y", f32, {4, 3});
      b.output(b.matmul(x, y, true, true));
      return b.finish();
    }
    case Op::conv: {
      // Two groups, strided, dilated and unevenly padded: [2, 4, 5, 6] * [6, 2, 2, 3].
      const Value x = b.input("x", f32, {2, 4, 5, 6});
      const Value w = b.param("w", f32, {6, 2, 2, 3});
      b.output(b.conv(x, w, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2));
      return b.finish();
    }
    case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::pow: {
      const Value x = b.input("x", DType::f16, {2, 1, 3});
      const Value y = b.input("y", DType::f16, {4, 1});
      b.output(b.op(op, {x, y}));
      return b.finish();
    }
    case Op::neg: case Op::exp: case Op::log: case Op::sqrt: case Op::rsqrt: case Op::tanh:
    case Op::sigmoid: case Op::relu: case Op::gelu: case Op::silu:
      b.output(b.op(op, {b.input("x", DType::bf16, {2, 3})}));
      return b.finish();
    case Op::softmax:
      b.output(b.softmax(b.input("x", f32, {2, 3}), 0));
      return b.finish();
    case Op::layer_norm: {
      const Value x = b.input("x", f32, {2, 8});
      b.output(b.layer_norm(x, b.param("g", f32, {8}), b.param("b", f32, {8}), 0.25));
      return b.finish();
    }
    case Op::rms_norm: {
      const Value x = b.input("x", DType::f16, {3, 4});
      b.output(b.rms_norm(x, b.param("w", DType::f16, {4}), 1e-3));
      return b.finish();
    }
    case Op::reduce_sum: case Op::reduce_mean: case Op::reduce_max:
      b.output(b.op(op, {b.input("x", f32, {2, 3, 4})},
                    {{"axes", std::vector<std::int64_t>{0, -1}}, {"keep_dims", true}}));
      return b.finish();
    case Op::reshape:
      b.output(b.reshape(b.input("x", f32, {2, 3}), {3, -1}));
      return b.finish();
    case Op::transpose:
      b.output(b.transpose(b.input("x", f32, {2, 3, 4}), {1, 0, 2}));
      return b.finish();
    case Op::slice:
      b.output(b.slice(b.input("x", f32, {2, 4}), {0, 1}, {2, 3}));
      return b.finish();
    case Op::concat: {
      const Value a = b.input("a", f32, {2, 1});
      const Value c = b.input("c", f32, {2, 2});
      const Value d = b.input("d", f32, {2, 3});
      b.output(b.concat({a, c, d}, 1));
      return b.finish();
    }
    case Op::gather: {
      const Value table = b.param("table", f32, {3, 5});
      const Value idx = b.input("idx", DType::i32, {2, 2});
      b.output(b.gather(table, idx, 1));
      return b.finish();
    }
    case Op::scatter_add: {
      const Value upd = b.input("upd", f32, {3, 2, 2});
      b.output(b.scatter_add(upd, b.input("idx", DType::i32, {2}), 4, 1));
      return b.finish();
    }
    case Op::broadcast_to:
      b.output(b.broadcast_to(b.input("x", f32, {3, 1}), {2, 3, 4}));
      return b.finish();
    case Op::softmax_cross_entropy:
      b.output(b.softmax_cross_entropy(b.input("logits", f32, {2, 5}), b.input("t", DType::i32, {2})));
      return b.finish();
    case Op::softmax_cross_entropy_grad: {
      const Value logits = b.input("logits", f32, {2, 5});
      b.output(b.softmax_cross_entropy_grad(logits, b.input("t", DType::i32, {2}), b.input("d", f32, {2})));
      return b.finish();
    }
    case Op::cast:
      b.output(b.cast(b.input("x", f32, {2, 3}), DType::i8));
      return b.finish();
    case Op::clamp:
      b.output(b.clamp(b.input("x", f32, {4}), -0.5, 6));
      return b.finish();
    case Op::where: {
      const Value cond = b.input("cond", DType::boolean, {2, 1});
      b.output(b.where(cond, b.input("a", f32, {2, 3}), b.input("b", f32, {3})));
      return b.finish();
    }
    case Op::dequantize:  // int4 values in i8 (bits 4), as 4-bit weights hold them
      b.output(b.op(Op::dequantize, {b.input("q", DType::i8, {4, 6}), b.input("scale", f32, {4, 2}),
                                     b.input("zero", DType::i8, {4, 1})}, {{"bits", std::int64_t{4}}}));
      return b.finish();
    case Op::quantize:
      b.output(b.op(Op::quantize, {b.input("x", f32, {4, 6}), b.input("scale", f32, {})}, {{"dtype", DType::u8}}));
      return b.finish();
    case Op::dequantize_affine:  // 2 rows of 64 4-bit values in one group each
      b.output(b.op(Op::dequantize_affine, {b.input("words", DType::u8, {2, 32}), b.input("scale", f32, {2, 1}),
                                            b.input("bias", f32, {2, 1})}, {{"bits", std::int64_t{4}}}));
      return b.finish();
    case Op::count_:
      break;
  }
  return std::nullopt;
}

}  // namespace orion::ir::testing
