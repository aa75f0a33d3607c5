#include "train/f64_interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ir/type_rules.h"

namespace orion::train::testing {

namespace {

using ir::Node;
using ir::Op;
using Index = std::vector<std::int64_t>;

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

Index unravel(std::int64_t flat, const Shape& s) {
  Index idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] == 0 ? 0 : flat % s[d];
    flat = s[d] == 0 ? 0 : flat / s[d];
  }
  return idx;
}

// Offset in a tensor of shape `in` read broadcast (numpy rules) at output index `idx`.
std::int64_t broadcast_offset(const Index& idx, const Shape& in) {
  const Shape st = strides_of(in);
  const std::size_t lead = idx.size() - in.size();
  std::int64_t off = 0;
  for (std::size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) off += idx[lead + d] * st[d];
  return off;
}

F64Tensor make(const Node& n) {
  F64Tensor t{n.type.dtype, n.type.shape, {}};
  t.v.assign(static_cast<std::size_t>(shape_numel(n.type.shape)), 0.0);
  return t;
}

double at(const F64Tensor& t, std::int64_t i) { return t.v[static_cast<std::size_t>(i)]; }

double unary(Op op, double x) {
  switch (op) {
    case Op::neg: return -x;
    case Op::exp: return std::exp(x);
    case Op::log: return std::log(x);
    case Op::sqrt: return std::sqrt(x);
    case Op::rsqrt: return 1.0 / std::sqrt(x);
    case Op::tanh: return std::tanh(x);
    case Op::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Op::relu: return x > 0 ? x : 0.0;
    case Op::gelu: return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Op::silu: return x / (1.0 + std::exp(-x));
    default: throw Error("f64: not unary");
  }
}

double binary(Op op, double a, double b) {
  switch (op) {
    case Op::add: return a + b;
    case Op::sub: return a - b;
    case Op::mul: return a * b;
    case Op::div: return a / b;
    case Op::pow: return std::pow(a, b);
    default: throw Error("f64: not binary");
  }
}

double cast_value(double x, DType to) {
  switch (to) {
    case DType::f32: case DType::f16: case DType::bf16: return x;
    case DType::boolean: return x != 0 ? 1.0 : 0.0;
    default: break;
  }
  if (std::isnan(x)) return 0;
  const double lo = to == DType::i32 ? -2147483648.0 : to == DType::i8 ? -128.0 : 0.0;
  const double hi = to == DType::i32 ? 2147483647.0 : to == DType::i8 ? 127.0 : 255.0;
  return std::clamp(std::trunc(x), lo, hi);
}

std::int64_t index_at(const Node& n, const F64Tensor& idx, std::int64_t j, std::int64_t size) {
  const double v = at(idx, j);
  if (v < 0 || v >= static_cast<double>(size))
    throw Error(ir::describe(n) + ": index " + std::to_string(v) + " out of range");
  return static_cast<std::int64_t>(v);
}

// x viewed as [outer, size, inner] around `axis`.
struct Around {
  std::int64_t outer = 1, size = 1, inner = 1;
  Around(const Shape& s, std::size_t axis) {
    for (std::size_t d = 0; d < axis; ++d) outer *= s[d];
    size = s[axis];
    for (std::size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  }
};

F64Tensor eval(const Node& n, const std::vector<const F64Tensor*>& in) {
  F64Tensor out = make(n);
  const Shape& os = out.shape;
  const std::int64_t N = out.numel();
  switch (n.info().cls) {
    case ir::OpClass::unary:
      for (std::int64_t i = 0; i < N; ++i) out.v[static_cast<std::size_t>(i)] = unary(n.op, at(*in[0], i));
      return out;
    case ir::OpClass::binary:
      for (std::int64_t i = 0; i < N; ++i) {
        const Index idx = unravel(i, os);
        out.v[static_cast<std::size_t>(i)] = binary(n.op, at(*in[0], broadcast_offset(idx, in[0]->shape)),
                                                    at(*in[1], broadcast_offset(idx, in[1]->shape)));
      }
      return out;
    default: break;
  }
  switch (n.op) {
    case Op::matmul: {
      const bool tx = n.attr_bool("transpose_x"), ty = n.attr_bool("transpose_y");
      const Shape& xs = in[0]->shape;
      const Shape& ys = in[1]->shape;
      const std::int64_t M = os[os.size() - 2], Nn = os.back(), K = tx ? xs[xs.size() - 2] : xs.back();
      const Shape ob(os.begin(), os.end() - 2);
      const Shape xb(xs.begin(), xs.end() - 2), yb(ys.begin(), ys.end() - 2);
      for (std::int64_t bi = 0; bi < shape_numel(ob); ++bi) {
        const Index idx = unravel(bi, ob);
        const std::int64_t xo = broadcast_offset(idx, xb) * M * K, yo = broadcast_offset(idx, yb) * K * Nn;
        for (std::int64_t i = 0; i < M; ++i)
          for (std::int64_t j = 0; j < Nn; ++j) {
            double s = 0;
            for (std::int64_t k = 0; k < K; ++k)
              s += at(*in[0], xo + (tx ? k * M + i : i * K + k)) * at(*in[1], yo + (ty ? j * K + k : k * Nn + j));
            out.v[static_cast<std::size_t>((bi * M + i) * Nn + j)] = s;
          }
      }
      return out;
    }
    case Op::conv: {
      const auto& st = n.attr_ints("strides");
      const auto& pd = n.attr_ints("pads");
      const auto& dl = n.attr_ints("dilations");
      const std::int64_t groups = n.attr_int("groups");
      const Shape& xs = in[0]->shape;
      const Shape& ws = in[1]->shape;
      const std::int64_t cin_g = ws[1], cout_g = ws[0] / groups;
      for (std::int64_t i = 0; i < N; ++i) {
        const Index o = unravel(i, os);  // b, co, y, x
        const std::int64_t g = o[1] / cout_g;
        double s = 0;
        for (std::int64_t c = 0; c < cin_g; ++c)
          for (std::int64_t ky = 0; ky < ws[2]; ++ky)
            for (std::int64_t kx = 0; kx < ws[3]; ++kx) {
              const std::int64_t yy = o[2] * st[0] - pd[0] + ky * dl[0], xx = o[3] * st[1] - pd[2] + kx * dl[1];
              if (yy < 0 || yy >= xs[2] || xx < 0 || xx >= xs[3]) continue;
              s += at(*in[0], ((o[0] * xs[1] + g * cin_g + c) * xs[2] + yy) * xs[3] + xx) *
                   at(*in[1], ((o[1] * cin_g + c) * ws[2] + ky) * ws[3] + kx);
            }
        out.v[static_cast<std::size_t>(i)] = s;
      }
      return out;
    }
    case Op::softmax: {
      const Around a(os, static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), static_cast<int>(os.size()))));
      for (std::int64_t o = 0; o < a.outer; ++o)
        for (std::int64_t q = 0; q < a.inner; ++q) {
          auto off = [&](std::int64_t k) { return (o * a.size + k) * a.inner + q; };
          double m = -std::numeric_limits<double>::infinity(), s = 0;
          for (std::int64_t k = 0; k < a.size; ++k) m = std::max(m, at(*in[0], off(k)));
          for (std::int64_t k = 0; k < a.size; ++k) s += std::exp(at(*in[0], off(k)) - m);
          for (std::int64_t k = 0; k < a.size; ++k)
            out.v[static_cast<std::size_t>(off(k))] = std::exp(at(*in[0], off(k)) - m) / s;
        }
      return out;
    }
    case Op::layer_norm: case Op::rms_norm: {
      const std::int64_t C = os.back();
      const double eps = n.attr_real("epsilon");
      const bool ln = n.op == Op::layer_norm;
      for (std::int64_t r = 0; r < N / C; ++r) {
        double mean = 0, var = 0;
        for (std::int64_t c = 0; c < C; ++c) mean += at(*in[0], r * C + c);
        mean = ln ? mean / static_cast<double>(C) : 0.0;
        for (std::int64_t c = 0; c < C; ++c) var += std::pow(at(*in[0], r * C + c) - mean, 2);
        const double rstd = 1.0 / std::sqrt(var / static_cast<double>(C) + eps);
        for (std::int64_t c = 0; c < C; ++c)
          out.v[static_cast<std::size_t>(r * C + c)] =
              (at(*in[0], r * C + c) - mean) * rstd * at(*in[1], c) + (ln ? at(*in[2], c) : 0.0);
      }
      return out;
    }
    case Op::reduce_sum: case Op::reduce_mean: case Op::reduce_max: {
      const Shape& xs = in[0]->shape;
      const std::vector<int> axes = ir::reduce_axes(n, static_cast<int>(xs.size()));
      Shape kept = xs;
      for (int a : axes) kept[static_cast<std::size_t>(a)] = 1;
      const bool max = n.op == Op::reduce_max;
      std::fill(out.v.begin(), out.v.end(), max ? -std::numeric_limits<double>::infinity() : 0.0);
      const Shape kst = strides_of(kept);
      for (std::int64_t i = 0; i < in[0]->numel(); ++i) {
        const Index idx = unravel(i, xs);
        std::int64_t o = 0;
        for (std::size_t d = 0; d < xs.size(); ++d) o += (kept[d] == 1 ? 0 : idx[d]) * kst[d];
        double& dst = out.v[static_cast<std::size_t>(o)];
        dst = max ? std::max(dst, at(*in[0], i)) : dst + at(*in[0], i);
      }
      if (n.op == Op::reduce_mean) {
        const double count = static_cast<double>(in[0]->numel()) / static_cast<double>(std::max<std::int64_t>(1, N));
        for (double& v : out.v) v /= count;
      }
      return out;
    }
    case Op::reshape: out.v = in[0]->v; return out;
    case Op::transpose: {
      const auto& perm = n.attr_ints("perm");
      const Shape ist = strides_of(in[0]->shape);
      for (std::int64_t i = 0; i < N; ++i) {
        const Index idx = unravel(i, os);
        std::int64_t off = 0;
        for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * ist[static_cast<std::size_t>(perm[d])];
        out.v[static_cast<std::size_t>(i)] = at(*in[0], off);
      }
      return out;
    }
    case Op::slice: {
      const auto& begin = n.attr_ints("begin");
      const Shape ist = strides_of(in[0]->shape);
      for (std::int64_t i = 0; i < N; ++i) {
        const Index idx = unravel(i, os);
        std::int64_t off = 0;
        for (std::size_t d = 0; d < idx.size(); ++d) off += (idx[d] + begin[d]) * ist[d];
        out.v[static_cast<std::size_t>(i)] = at(*in[0], off);
      }
      return out;
    }
    case Op::concat: {
      const auto axis = static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), static_cast<int>(os.size())));
      for (std::int64_t i = 0; i < N; ++i) {
        Index idx = unravel(i, os);
        std::size_t k = 0;
        while (idx[axis] >= in[k]->shape[axis]) idx[axis] -= in[k++]->shape[axis];
        std::int64_t off = 0;
        const Shape st = strides_of(in[k]->shape);
        for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * st[d];
        out.v[static_cast<std::size_t>(i)] = at(*in[k], off);
      }
      return out;
    }
    case Op::gather: {
      const Shape& ts = in[0]->shape;
      const auto axis = static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), static_cast<int>(ts.size())));
      const Around a(ts, axis);
      const std::int64_t m = in[1]->numel();
      for (std::int64_t o = 0; o < a.outer; ++o)
        for (std::int64_t j = 0; j < m; ++j)
          for (std::int64_t q = 0; q < a.inner; ++q)
            out.v[static_cast<std::size_t>((o * m + j) * a.inner + q)] =
                at(*in[0], (o * a.size + index_at(n, *in[1], j, a.size)) * a.inner + q);
      return out;
    }
    case Op::scatter_add: {
      const auto axis = static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), static_cast<int>(os.size())));
      const Around a(os, axis);
      const std::int64_t m = in[1]->numel();
      for (std::int64_t o = 0; o < a.outer; ++o)
        for (std::int64_t j = 0; j < m; ++j)
          for (std::int64_t q = 0; q < a.inner; ++q)
            out.v[static_cast<std::size_t>((o * a.size + index_at(n, *in[1], j, a.size)) * a.inner + q)] +=
                at(*in[0], (o * m + j) * a.inner + q);
      return out;
    }
    case Op::broadcast_to:
      for (std::int64_t i = 0; i < N; ++i)
        out.v[static_cast<std::size_t>(i)] = at(*in[0], broadcast_offset(unravel(i, os), in[0]->shape));
      return out;
    case Op::cast:
      for (std::int64_t i = 0; i < N; ++i) out.v[static_cast<std::size_t>(i)] = cast_value(at(*in[0], i), out.dtype);
      return out;
    case Op::clamp:
      for (std::int64_t i = 0; i < N; ++i)
        out.v[static_cast<std::size_t>(i)] = std::clamp(at(*in[0], i), n.attr_real("min"), n.attr_real("max"));
      return out;
    case Op::where:
      for (std::int64_t i = 0; i < N; ++i) {
        const Index idx = unravel(i, os);
        const bool c = at(*in[0], broadcast_offset(idx, in[0]->shape)) != 0;
        const F64Tensor& src = c ? *in[1] : *in[2];
        out.v[static_cast<std::size_t>(i)] = at(src, broadcast_offset(idx, src.shape));
      }
      return out;
    case Op::softmax_cross_entropy: case Op::softmax_cross_entropy_grad: {
      const std::int64_t V = in[0]->shape.back(), rows = in[1]->numel();
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t t = index_at(n, *in[1], r, V);
        double m = -std::numeric_limits<double>::infinity(), s = 0;
        for (std::int64_t j = 0; j < V; ++j) m = std::max(m, at(*in[0], r * V + j));
        for (std::int64_t j = 0; j < V; ++j) s += std::exp(at(*in[0], r * V + j) - m);
        if (n.op == Op::softmax_cross_entropy) {
          out.v[static_cast<std::size_t>(r)] = std::log(s) + m - at(*in[0], r * V + t);
          continue;
        }
        for (std::int64_t j = 0; j < V; ++j)
          out.v[static_cast<std::size_t>(r * V + j)] =
              (std::exp(at(*in[0], r * V + j) - m) / s - (j == t ? 1.0 : 0.0)) * at(*in[2], r);
      }
      return out;
    }
    default: break;
  }
  throw Error("f64 interpreter: no implementation of " + ir::describe(n));
}

}  // namespace

F64Tensor to_f64(const Tensor& t) {
  F64Tensor out{t.dtype(), t.shape(), {}};
  if (is_float(t.dtype())) {
    const Tensor f32 = t.to(DType::f32);  // kept alive: a span of a temporary would dangle
    for (float f : f32.span<float>()) out.v.push_back(f);
  } else {
    const Tensor i = t.to(DType::i32);
    for (std::int32_t x : i.span<std::int32_t>()) out.v.push_back(x);
  }
  return out;
}

Tensor to_tensor(const F64Tensor& t) {
  if (is_float(t.dtype)) {
    std::vector<float> f(t.v.begin(), t.v.end());
    return Tensor::from_floats(t.shape, f).to(t.dtype);
  }
  std::vector<std::int32_t> i;
  for (double d : t.v) i.push_back(static_cast<std::int32_t>(d));
  return Tensor::from_ints(t.shape, i).to(t.dtype);
}

std::vector<F64Tensor> run_f64(const ir::Graph& graph, const F64Bindings& bindings) {
  std::vector<F64Tensor> values(static_cast<std::size_t>(graph.size()));
  for (ir::ValueId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    F64Tensor& v = values[static_cast<std::size_t>(id)];
    if (n.op == Op::input || n.op == Op::param) {
      const auto it = bindings.find(n.name);
      if (it == bindings.end()) throw Error("f64 interpreter: %" + n.name + " is not bound");
      if (it->second.shape != n.type.shape) throw Error("f64 interpreter: %" + n.name + " bound with another shape");
      v = it->second;
      v.dtype = n.type.dtype;
    } else if (n.op == Op::constant) {
      v = to_f64(n.attr<Tensor>("value"));
    } else {
      std::vector<const F64Tensor*> in;
      for (ir::ValueId i : n.inputs) in.push_back(&values[static_cast<std::size_t>(i)]);
      v = eval(n, in);
    }
  }
  std::vector<F64Tensor> out;
  for (ir::ValueId id : graph.outputs()) out.push_back(values[static_cast<std::size_t>(id)]);
  return out;
}

}  // namespace orion::train::testing
