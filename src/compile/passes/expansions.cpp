#include "compile/passes/expansions.h"

#include <cmath>
#include <string>

#include "ir/type_rules.h"

namespace orion::compile {

namespace {

using ir::Op;
using ir::ValueId;

// The nodes of one expansion: names "<base>.<role>", scalars of x's dtype.
class Writer {
 public:
  Writer(GraphRewriter& rw, ValueId x, std::string_view base)
      : rw_(rw), dtype_(rw.node(x).type.dtype), base_(base) {}

  ValueId op(Op op, std::vector<ValueId> in, std::string_view role, ir::NamedAttrs attrs = {}) {
    return rw_.op(op, std::move(in), std::move(attrs), name(role));
  }
  ValueId scalar(double v, std::string_view role) { return rw_.scalar(v, dtype_, name(role)); }
  ValueId reduce(Op op, ValueId x, int axis, std::string_view role) {
    return this->op(op, {x}, role, {{"axes", std::vector<std::int64_t>{axis}}, {"keep_dims", true}});
  }

 private:
  std::string name(std::string_view role) const { return base_ + "." + std::string(role); }
  GraphRewriter& rw_;
  DType dtype_;
  std::string base_;
};

constexpr double kPi = 3.14159265358979323846;

}  // namespace

ValueId expand_gelu(GraphRewriter& rw, ValueId x, std::string_view base, GeluForm form) {
  Writer w(rw, x, base);
  const ValueId x2 = w.op(Op::mul, {x, x}, "x2");
  const ValueId x3 = w.op(Op::mul, {x2, x}, "x3");
  const ValueId cx3 = w.op(Op::mul, {x3, w.scalar(0.044715, "k_cubic")}, "cx3");
  const ValueId inner = w.op(Op::add, {x, cx3}, "inner");
  const double k = std::sqrt(2.0 / kPi);
  if (form == GeluForm::sigmoid) {
    const ValueId u2 = w.op(Op::mul, {inner, w.scalar(2 * k, "k_2_sqrt_2_over_pi")}, "u2");
    return w.op(Op::mul, {x, w.op(Op::sigmoid, {u2}, "sigmoid")}, "out");
  }
  const ValueId u = w.op(Op::mul, {inner, w.scalar(k, "k_sqrt_2_over_pi")}, "u");
  const ValueId t = w.op(Op::tanh, {u}, "tanh");
  const ValueId t1 = w.op(Op::add, {t, w.scalar(1, "k_one")}, "tanh_1");
  const ValueId hx = w.op(Op::mul, {x, w.scalar(0.5, "k_half")}, "half_x");
  return w.op(Op::mul, {hx, t1}, "out");
}

ValueId expand_silu(GraphRewriter& rw, ValueId x, std::string_view base) {
  Writer w(rw, x, base);
  return w.op(Op::mul, {x, w.op(Op::sigmoid, {x}, "sigmoid")}, "out");
}

ValueId expand_layer_norm(GraphRewriter& rw, ValueId x, ValueId gamma, ValueId beta, double epsilon,
                          int axis, std::string_view base) {
  Writer w(rw, x, base);
  axis = ir::normalize_axis(axis, rw.node(x).type.rank());  // MIL programs spell axes >= 0
  const ValueId mean = w.reduce(Op::reduce_mean, x, axis, "mean");
  const ValueId d = w.op(Op::sub, {x, mean}, "centered");
  const ValueId var = w.reduce(Op::reduce_mean, w.op(Op::mul, {d, d}, "squared"), axis, "var");
  const ValueId ve = w.op(Op::add, {var, w.scalar(epsilon, "k_eps")}, "var_eps");
  const ValueId r = w.op(Op::pow, {ve, w.scalar(-0.5, "k_rsqrt")}, "rstd");
  const ValueId n = w.op(Op::mul, {d, r}, "normed");
  return w.op(Op::add, {w.op(Op::mul, {n, gamma}, "scaled"), beta}, "out");
}

ValueId expand_rms_norm(GraphRewriter& rw, ValueId x, ValueId weight, double epsilon, int axis,
                        std::string_view base) {
  Writer w(rw, x, base);
  const ir::TensorType t = rw.node(x).type;
  axis = ir::normalize_axis(axis, t.rank());
  const auto c = t.shape[static_cast<std::size_t>(axis)];
  const ValueId sum = w.reduce(Op::reduce_sum, w.op(Op::mul, {x, x}, "squared"), axis, "sum");
  const ValueId ms = w.op(Op::mul, {sum, w.scalar(1.0 / static_cast<double>(c), "k_inv_c")}, "mean");
  const ValueId ve = w.op(Op::add, {ms, w.scalar(epsilon, "k_eps")}, "mean_eps");
  const ValueId r = w.op(Op::pow, {ve, w.scalar(-0.5, "k_rsqrt")}, "rstd");
  return w.op(Op::mul, {w.op(Op::mul, {x, r}, "normed"), weight}, "out");
}

ValueId expand_neg(GraphRewriter& rw, ValueId x, std::string_view base) {
  Writer w(rw, x, base);
  return w.op(Op::mul, {x, w.scalar(-1, "k_minus_one")}, "out");
}

ValueId expand_rsqrt(GraphRewriter& rw, ValueId x, std::string_view base) {
  Writer w(rw, x, base);
  return w.op(Op::pow, {x, w.scalar(-0.5, "k_rsqrt")}, "out");
}

}  // namespace orion::compile
