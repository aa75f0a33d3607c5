#include "compile/passes/expansions.h"

#include <cmath>
#include <string>

#include "ir/type_rules.h"

namespace orion::compile {

namespace {

using ir::Op;
using ir::ValueId;

// The nodes of one expansion: names "<base>.<role>", scalars of x's dtype.
class ExpansionWriter {
 public:
  ExpansionWriter(ir::GraphRewriter& rw, ValueId x, std::string_view base)
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
  ir::GraphRewriter& rw_;
  DType dtype_;
  std::string base_;
};

constexpr double kPi = 3.14159265358979323846;

}  // namespace

ValueId expand_gelu(ir::GraphRewriter& rw, ValueId x, std::string_view base, GeluForm form) {
  ExpansionWriter w(rw, x, base);
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

ValueId expand_silu(ir::GraphRewriter& rw, ValueId x, std::string_view base) {
  ExpansionWriter w(rw, x, base);
  return w.op(Op::mul, {x, w.op(Op::sigmoid, {x}, "sigmoid")}, "out");
}

namespace {

struct ScaledRows {
  ValueId scaled, rstd;  // x / s, and 1 / sqrt(mean((x / s)^2) + epsilon / s^2)
};

// The rows of x divided by s, a bound on their largest magnitude (relu(max x) + relu(max -x) +
// 2^-14, per row), and the reciprocal root mean square of that, epsilon scaled alike: the
// product of the two is x / sqrt(mean(x^2) + epsilon) for any s > 0. Why not square x itself:
// the ANE stores every value in fp16, where x * x overflows once |x| > 256 and the sum or mean
// of a row of squares soon after (a trained model's residual stream gets there: the 110M
// Llama's did, and its logits came out NaN). x / s is at most 1, so nothing overflows, and at
// least one element of a row is at least 1/2, so the mean stays a normal fp16 number. The
// epsilon is added as (sqrt(epsilon) / s)^2, which cannot overflow either.
ScaledRows scaled_rms(ExpansionWriter& w, ValueId x, int axis, double epsilon) {
  const ValueId hi = w.reduce(Op::reduce_max, x, axis, "max");
  const ValueId lo = w.reduce(Op::reduce_max, w.op(Op::mul, {x, w.scalar(-1, "k_minus_one")}, "negated"), axis, "max_negated");
  const ValueId both = w.op(Op::add, {w.op(Op::relu, {hi}, "max_pos"), w.op(Op::relu, {lo}, "max_negated_pos")}, "bound_sum");
  const ValueId s = w.op(Op::add, {both, w.scalar(std::ldexp(1.0, -14), "k_tiny")}, "bound");
  const ValueId xs = w.op(Op::div, {x, s}, "scaled");
  const ValueId ms = w.reduce(Op::reduce_mean, w.op(Op::mul, {xs, xs}, "squared"), axis, "mean_square");
  const ValueId e = w.op(Op::div, {w.scalar(std::sqrt(epsilon), "k_sqrt_eps"), s}, "eps_root");
  const ValueId ve = w.op(Op::add, {ms, w.op(Op::mul, {e, e}, "eps_scaled")}, "mean_eps");
  return {xs, w.op(Op::pow, {ve, w.scalar(-0.5, "k_rsqrt")}, "rstd")};
}

}  // namespace

ValueId expand_layer_norm(ir::GraphRewriter& rw, ValueId x, ValueId gamma, ValueId beta, double epsilon,
                          int axis, std::string_view base) {
  ExpansionWriter w(rw, x, base);
  axis = ir::normalize_axis(axis, rw.node(x).type.rank());  // MIL programs spell axes >= 0
  const ValueId mean = w.reduce(Op::reduce_mean, x, axis, "mean");
  const ScaledRows r = scaled_rms(w, w.op(Op::sub, {x, mean}, "centered"), axis, epsilon);
  const ValueId n = w.op(Op::mul, {r.scaled, r.rstd}, "normed");
  return w.op(Op::add, {w.op(Op::mul, {n, gamma}, "scaled_gain"), beta}, "out");
}

ValueId expand_rms_norm(ir::GraphRewriter& rw, ValueId x, ValueId weight, double epsilon, int axis,
                        std::string_view base) {
  ExpansionWriter w(rw, x, base);
  axis = ir::normalize_axis(axis, rw.node(x).type.rank());
  const ScaledRows r = scaled_rms(w, x, axis, epsilon);
  return w.op(Op::mul, {w.op(Op::mul, {r.scaled, r.rstd}, "normed"), weight}, "out");
}

ValueId expand_neg(ir::GraphRewriter& rw, ValueId x, std::string_view base) {
  ExpansionWriter w(rw, x, base);
  return w.op(Op::mul, {x, w.scalar(-1, "k_minus_one")}, "out");
}

ValueId expand_rsqrt(ir::GraphRewriter& rw, ValueId x, std::string_view base) {
  ExpansionWriter w(rw, x, base);
  return w.op(Op::pow, {x, w.scalar(-0.5, "k_rsqrt")}, "out");
}

}  // namespace orion::compile
