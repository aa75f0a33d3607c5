#include "ir/grad_rules.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ir/type_rules.h"

// GELU, softmax, layer_norm and rms_norm take their backward pass written out in existing ops
// rather than fused backward ops: on the CPU these are a few elementwise passes over activations
// whose cost is small beside the matrix products of the same step, and written-out graphs run
// (and lower to the ANE) wherever the forward ops do.
namespace orion::ir {

namespace {

std::vector<std::int64_t> dims(const Shape& s) { return {s.begin(), s.end()}; }

Value scalar_like(Builder& b, Value like, double v) {
  return b.scalar(static_cast<float>(v), b.type(like).dtype);
}

Value zeros(Builder& b, Value like, const Shape& shape) {
  return b.broadcast_to(scalar_like(b, like, 0.0), dims(shape));
}

// The node's reduced axes with keep_dims, as the shape of its output kept at rank.
Shape kept_shape(const Shape& x, const std::vector<int>& axes) {
  Shape s = x;
  for (int a : axes) s[static_cast<std::size_t>(a)] = 1;
  return s;
}

// 1 where x differs from y (as a where condition), y of a shape that broadcasts to x's.
Value differs(Builder& b, Value x, Value y) { return b.cast(b.sub(x, y), DType::boolean); }

}  // namespace

Value reduce_to_shape(Builder& b, Value g, Shape shape) {
  const Shape gs = b.shape(g);
  if (gs == shape) return g;
  const std::size_t lead = gs.size() - shape.size();
  std::vector<std::int64_t> axes;
  for (std::size_t d = 0; d < gs.size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && gs[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
  Value r = axes.empty() ? g : b.reduce_sum(g, axes, true);
  return b.reshape(r, dims(shape));
}

namespace grad {

Grads matmul(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const bool ta = node.attr_bool("transpose_x"), tb = node.attr_bool("transpose_y");
  const Value x = in[0], y = in[1];
  const Shape xs = b.shape(x), ys = b.shape(y);
  // With op(x) = x or x^T: d op(x) = g op(y)^T and d op(y) = op(x)^T g, transposed back where the
  // operand is stored transposed; every transpose is a flag of the product, never a copy.
  Value dx = ta ? b.matmul(y, g, tb, true) : b.matmul(g, y, false, !tb);
  Value dy;
  if (ys.size() == 2 && xs.size() > 2 && !ta) {
    // A weight applied to a batch of rows: one tall product over all rows rather than one per
    // batch summed afterwards.
    const std::int64_t k = xs.back(), n = b.shape(g).back();
    const Value x2 = b.reshape(x, {-1, k}), g2 = b.reshape(g, {-1, n});
    dy = tb ? b.matmul(g2, x2, true, false) : b.matmul(x2, g2, true, false);
  } else {
    dy = tb ? b.matmul(g, x, true, ta) : b.matmul(x, g, !ta, false);
  }
  return {reduce_to_shape(b, dx, xs), reduce_to_shape(b, dy, ys)};
}

Grads binary(Builder& b, const Node& node, std::span<const Value> in, Value out, Value g) {
  const Value x = in[0], y = in[1];
  Value dx, dy;
  switch (node.op) {
    case Op::add: dx = g; dy = g; break;
    case Op::sub: dx = g; dy = b.neg(g); break;
    case Op::mul: dx = b.mul(g, y); dy = b.mul(g, x); break;
    case Op::div:
      dx = b.div(g, y);
      dy = b.neg(b.div(b.mul(g, out), y));  // -g x / y^2
      break;
    case Op::pow:
      dx = b.mul(g, b.mul(y, b.pow(x, b.sub(y, scalar_like(b, y, 1.0)))));
      dy = b.mul(g, b.mul(out, b.log(x)));  // defined for x > 0, as x^y for real y
      break;
    default: throw Error(describe(node) + ": not a binary op");
  }
  return {reduce_to_shape(b, dx, b.shape(x)), reduce_to_shape(b, dy, b.shape(y))};
}

Grads unary(Builder& b, const Node& node, std::span<const Value> in, Value out, Value g) {
  const Value x = in[0], y = out;
  auto c = [&](double v) { return scalar_like(b, x, v); };
  switch (node.op) {
    case Op::neg: return {b.neg(g)};
    case Op::exp: return {b.mul(g, y)};
    case Op::log: return {b.div(g, x)};
    case Op::sqrt: return {b.mul(b.div(g, y), c(0.5))};
    case Op::rsqrt: return {b.mul(b.mul(g, b.mul(y, b.mul(y, y))), c(-0.5))};  // -x^-3/2 / 2
    case Op::tanh: return {b.mul(g, b.sub(c(1.0), b.mul(y, y)))};
    case Op::sigmoid: return {b.mul(g, b.mul(y, b.sub(c(1.0), y)))};
    case Op::relu: return {b.where(b.cast(y, DType::boolean), g, c(0.0))};  // relu(x) != 0 iff x > 0
    case Op::gelu: {
      // gelu = x/2 (1 + t), t = tanh(u), u = s (x + k x^3):
      // gelu' = (1 + t)/2 + x/2 (1 - t^2) s (1 + 3k x^2).
      constexpr double s = 0.7978845608028654, k = 0.044715;
      const Value x2 = b.mul(x, x);
      const Value t = b.tanh(b.mul(x, b.add(c(s), b.mul(x2, c(s * k)))));
      const Value du = b.add(c(s), b.mul(x2, c(3 * s * k)));
      const Value half_x = b.mul(x, c(0.5));
      const Value d = b.add(b.mul(b.add(t, c(1.0)), c(0.5)),
                            b.mul(b.mul(half_x, b.sub(c(1.0), b.mul(t, t))), du));
      return {b.mul(g, d)};
    }
    case Op::silu: {
      const Value sg = b.sigmoid(x);  // silu' = s + y (1 - s)
      return {b.mul(g, b.add(sg, b.mul(y, b.sub(c(1.0), sg))))};
    }
    default: throw Error(describe(node) + ": not a unary op");
  }
}

Grads softmax(Builder& b, const Node& node, std::span<const Value>, Value out, Value g) {
  const std::int64_t axis = node.attr_int("axis");
  const Value dot = b.reduce_sum(b.mul(g, out), {axis}, true);
  return {b.mul(out, b.sub(g, dot))};
}

Grads layer_norm(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const Value x = in[0], gamma = in[1];
  const Value mean = b.reduce_mean(x, {-1}, true);
  const Value xc = b.sub(x, mean);
  const Value var = b.reduce_mean(b.mul(xc, xc), {-1}, true);
  const Value rstd = b.rsqrt(b.add(var, scalar_like(b, x, node.attr_real("epsilon"))));
  const Value xhat = b.mul(xc, rstd);
  // dx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gh = g gamma.
  const Value gh = b.mul(g, gamma);
  const Value dx = b.mul(rstd, b.sub(b.sub(gh, b.reduce_mean(gh, {-1}, true)),
                                     b.mul(xhat, b.reduce_mean(b.mul(gh, xhat), {-1}, true))));
  return {dx, reduce_to_shape(b, b.mul(g, xhat), b.shape(gamma)), reduce_to_shape(b, g, b.shape(in[2]))};
}

Grads rms_norm(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const Value x = in[0], w = in[1];
  const Value r = b.rsqrt(b.add(b.reduce_mean(b.mul(x, x), {-1}, true),
                                scalar_like(b, x, node.attr_real("epsilon"))));
  const Value xhat = b.mul(x, r);
  const Value gh = b.mul(g, w);  // dx = r (gh - xhat mean(gh xhat))
  const Value dx = b.mul(r, b.sub(gh, b.mul(xhat, b.reduce_mean(b.mul(gh, xhat), {-1}, true))));
  return {dx, reduce_to_shape(b, b.mul(g, xhat), b.shape(w))};
}

Grads reduce(Builder& b, const Node& node, std::span<const Value> in, Value out, Value g) {
  const Value x = in[0];
  const Shape xs = b.shape(x);
  const std::vector<int> axes = reduce_axes(node, static_cast<int>(xs.size()));
  const Shape kept = kept_shape(xs, axes);
  const Value gk = b.reshape(g, dims(kept));
  switch (node.op) {
    case Op::reduce_sum: return {b.broadcast_to(gk, dims(xs))};
    case Op::reduce_mean: {
      std::int64_t n = 1;
      for (int a : axes) n *= xs[static_cast<std::size_t>(a)];
      return {b.broadcast_to(b.mul(gk, scalar_like(b, g, 1.0 / static_cast<double>(n))), dims(xs))};
    }
    case Op::reduce_max:
      // To every element equal to the maximum (ties each get the whole gradient).
      return {b.where(differs(b, x, b.reshape(out, dims(kept))), scalar_like(b, g, 0.0), gk)};
    default: throw Error(describe(node) + ": not a reduction");
  }
}

Grads reshape(Builder& b, const Node&, std::span<const Value> in, Value, Value g) {
  return {b.reshape(g, dims(b.shape(in[0])))};
}

Grads transpose(Builder& b, const Node& node, std::span<const Value>, Value, Value g) {
  const auto& perm = node.attr_ints("perm");
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {b.transpose(g, inverse)};
}

Grads slice(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  // The gradient padded with zeros back to x's shape, one axis at a time.
  const Shape xs = b.shape(in[0]);
  const auto& begin = node.attr_ints("begin");
  const auto& end = node.attr_ints("end");
  Value d = g;
  for (std::size_t a = 0; a < xs.size(); ++a) {
    if (begin[a] == 0 && end[a] == xs[a]) continue;
    std::vector<Value> parts;
    Shape pad = b.shape(d);
    if (begin[a] > 0) {
      pad[a] = begin[a];
      parts.push_back(zeros(b, g, pad));
    }
    parts.push_back(d);
    if (end[a] < xs[a]) {
      pad[a] = xs[a] - end[a];
      parts.push_back(zeros(b, g, pad));
    }
    d = b.concat(parts, static_cast<std::int64_t>(a));
  }
  return {d};
}

Grads concat(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const Shape gs = b.shape(g);
  const auto axis = static_cast<std::size_t>(normalize_axis(node.attr_int("axis"), static_cast<int>(gs.size())));
  Grads out;
  std::vector<std::int64_t> begin(gs.size(), 0), end = dims(gs);
  for (Value v : in) {
    end[axis] = begin[axis] + b.shape(v)[axis];
    out.push_back(b.slice(g, begin, end));
    begin[axis] = end[axis];
  }
  return out;
}

Grads gather(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const Shape ts = b.shape(in[0]);
  const std::int64_t axis = normalize_axis(node.attr_int("axis"), static_cast<int>(ts.size()));
  return {b.scatter_add(g, in[1], ts[static_cast<std::size_t>(axis)], axis), std::nullopt};
}

Grads scatter_add(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  return {b.gather(g, in[1], node.attr_int("axis")), std::nullopt};
}

Grads broadcast_to(Builder& b, const Node&, std::span<const Value> in, Value, Value g) {
  return {reduce_to_shape(b, g, b.shape(in[0]))};
}

Grads cast(Builder& b, const Node& node, std::span<const Value> in, Value, Value g) {
  const DType from = b.type(in[0]).dtype;
  if (!is_float(from) || !is_float(node.type.dtype)) return {std::nullopt};
  return {b.cast(g, from)};
}

Grads clamp(Builder& b, const Node&, std::span<const Value> in, Value out, Value g) {
  // Zero where the clamp moved x.
  return {b.where(differs(b, in[0], out), scalar_like(b, g, 0.0), g)};
}

Grads where(Builder& b, const Node&, std::span<const Value> in, Value, Value g) {
  const Value zero = scalar_like(b, g, 0.0);
  return {std::nullopt, reduce_to_shape(b, b.where(in[0], g, zero), b.shape(in[1])),
          reduce_to_shape(b, b.where(in[0], zero, g), b.shape(in[2]))};
}

Grads softmax_cross_entropy(Builder& b, const Node&, std::span<const Value> in, Value, Value g) {
  return {b.softmax_cross_entropy_grad(in[0], in[1], g), std::nullopt};
}

}  // namespace grad
}  // namespace orion::ir
