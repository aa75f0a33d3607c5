#include "train/grad_test_util.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace orion::train::testing {

namespace {

using ir::Builder;
using ir::Value;
constexpr DType f32 = DType::f32;

Value ints(Builder& b, Shape shape, std::vector<std::int32_t> v) { return b.constant(Tensor::from_ints(std::move(shape), v)); }

}  // namespace

std::vector<GradCase> grad_cases() {
  std::vector<GradCase> cases;
  auto add = [&](std::string name, std::function<Value(Builder&)> f, Domain d = {}) {
    cases.push_back({std::move(name), std::move(f), std::move(d)});
  };
  const Domain positive{0.5, 2.0};
  // Linear algebra: every transpose pair, batch broadcasting on either side.
  for (int t = 0; t < 4; ++t) {
    const bool tx = t & 1, ty = t & 2;
    add("matmul tx" + std::to_string(tx) + " ty" + std::to_string(ty), [tx, ty](Builder& b) {
      const Value x = b.input("x", f32, tx ? Shape{3, 2} : Shape{2, 3});
      const Value y = b.input("y", f32, ty ? Shape{4, 3} : Shape{3, 4});
      return b.matmul(x, y, tx, ty);
    });
  }
  add("matmul batch x, rows of a weight", [](Builder& b) {
    return b.matmul(b.input("x", f32, {2, 3, 4}), b.input("w", f32, {4, 5}));
  });
  add("matmul batch x, transposed weight", [](Builder& b) {
    return b.matmul(b.input("x", f32, {2, 3, 4}), b.input("w", f32, {5, 4}), false, true);
  });
  add("matmul batch broadcast both", [](Builder& b) {
    return b.matmul(b.input("x", f32, {2, 1, 4, 3}), b.input("y", f32, {3, 4, 2}), true, false);
  });
  add("matmul batch y only", [](Builder& b) {
    return b.matmul(b.input("x", f32, {2, 3}), b.input("y", f32, {2, 3, 4}));
  });
  // Binary ops with broadcasting.
  for (ir::Op op : {ir::Op::add, ir::Op::sub, ir::Op::mul, ir::Op::div, ir::Op::pow}) {
    const bool pos = op == ir::Op::pow || op == ir::Op::div;
    const std::string n(ir::op_info(op).name);
    add(n + " [2,3] [3]", [op](Builder& b) { return b.op(op, {b.input("x", f32, {2, 3}), b.input("y", f32, {3})}); },
        pos ? positive : Domain{});
    add(n + " [2,1] [1,3]", [op](Builder& b) { return b.op(op, {b.input("x", f32, {2, 1}), b.input("y", f32, {1, 3})}); },
        pos ? positive : Domain{});
    add(n + " [] [2,2]", [op](Builder& b) { return b.op(op, {b.input("x", f32, {}), b.input("y", f32, {2, 2})}); },
        pos ? positive : Domain{});
  }
  add("mul x x (two uses)", [](Builder& b) { const Value x = b.input("x", f32, {4}); return b.mul(x, x); });
  // Unary ops.
  for (ir::Op op : {ir::Op::neg, ir::Op::exp, ir::Op::log, ir::Op::sqrt, ir::Op::rsqrt, ir::Op::tanh,
                    ir::Op::sigmoid, ir::Op::relu, ir::Op::gelu, ir::Op::silu}) {
    const bool pos = op == ir::Op::log || op == ir::Op::sqrt || op == ir::Op::rsqrt;
    Domain d = pos ? positive : Domain{-3, 3};
    if (op == ir::Op::relu) d = Domain{-2, 2, {0.0}, 0.01};
    add(std::string(ir::op_info(op).name), [op](Builder& b) { return b.op(op, {b.input("x", f32, {2, 5})}); }, d);
  }
  add("softmax axis -1", [](Builder& b) { return b.softmax(b.input("x", f32, {3, 4}), -1); });
  add("softmax axis 0", [](Builder& b) { return b.softmax(b.input("x", f32, {3, 4, 2}), 0); });
  add("layer_norm", [](Builder& b) {
    return b.layer_norm(b.input("x", f32, {2, 3, 5}), b.input("g", f32, {5}), b.input("beta", f32, {5}), 1e-3);
  });
  add("rms_norm", [](Builder& b) { return b.rms_norm(b.input("x", f32, {3, 5}), b.input("w", f32, {5}), 1e-3); });
  for (ir::Op op : {ir::Op::reduce_sum, ir::Op::reduce_mean, ir::Op::reduce_max}) {
    const std::string n(ir::op_info(op).name);
    add(n + " axis 1", [op](Builder& b) {
      return b.op(op, {b.input("x", f32, {2, 3, 4})}, {{"axes", std::vector<std::int64_t>{1}}, {"keep_dims", false}});
    });
    add(n + " axes 0,-1 keep", [op](Builder& b) {
      return b.op(op, {b.input("x", f32, {2, 3, 4})}, {{"axes", std::vector<std::int64_t>{0, -1}}, {"keep_dims", true}});
    });
    add(n + " all", [op](Builder& b) {
      return b.op(op, {b.input("x", f32, {2, 3})}, {{"axes", std::vector<std::int64_t>{0, 1}}, {"keep_dims", false}});
    });
  }
  add("reshape", [](Builder& b) { return b.reshape(b.input("x", f32, {2, 6}), {3, -1, 2}); });
  add("transpose", [](Builder& b) { return b.transpose(b.input("x", f32, {2, 3, 4}), {2, 0, 1}); });
  add("slice inner box", [](Builder& b) { return b.slice(b.input("x", f32, {4, 5}), {1, 0}, {3, 4}); });
  add("slice one axis", [](Builder& b) { return b.slice(b.input("x", f32, {2, 6}), {0, 2}, {2, 4}); });
  add("concat axis 1", [](Builder& b) {
    return b.concat({b.input("a", f32, {2, 1}), b.input("c", f32, {2, 3}), b.input("d", f32, {2, 2})}, 1);
  });
  add("gather rows (repeated indices)", [](Builder& b) {
    return b.gather(b.input("table", f32, {5, 3}), ints(b, {2, 2}, {4, 0, 4, 2}), 0);
  });
  add("gather axis 1", [](Builder& b) { return b.gather(b.input("table", f32, {2, 4, 3}), ints(b, {3}, {3, 1, 3}), 1); });
  add("scatter_add axis 0", [](Builder& b) { return b.scatter_add(b.input("u", f32, {3, 2}), ints(b, {3}, {1, 3, 1}), 4, 0); });
  add("broadcast_to", [](Builder& b) { return b.broadcast_to(b.input("x", f32, {3, 1}), {2, 3, 4}); });
  add("cast f32 -> f16 -> f32", [](Builder& b) {
    return b.cast(b.mul(b.cast(b.input("x", f32, {3}), DType::f16), b.scalar(2.0f, DType::f16)), f32);
  });
  add("clamp", [](Builder& b) { return b.clamp(b.input("x", f32, {3, 4}), -0.5, 0.75); }, Domain{-2, 2, {-0.5, 0.75}, 0.01});
  add("where (broadcast)", [](Builder& b) {
    Tensor c(DType::boolean, {2, 1});
    c.data<std::uint8_t>()[0] = 1;
    c.data<std::uint8_t>()[1] = 0;
    return b.where(b.constant(c), b.input("a", f32, {2, 3}), b.input("bb", f32, {3}));
  });
  add("softmax_cross_entropy", [](Builder& b) {
    return b.softmax_cross_entropy(b.input("logits", f32, {4, 6}), ints(b, {4}, {5, 0, 2, 2}));
  });
  add("softmax_cross_entropy [2,2,V] ", [](Builder& b) {
    return b.softmax_cross_entropy(b.input("logits", f32, {2, 2, 3}), ints(b, {2, 2}, {1, 0, 2, 2}));
  });
  return cases;
}

ir::Graph loss_graph(const GradCase& c, std::uint64_t seed) {
  Builder b("case");
  Value y = c.build(b);
  if (b.type(y).dtype != f32) y = b.cast(y, f32);
  Rng rng(seed);
  const Shape shape = b.shape(y);
  Tensor w(f32, shape);
  rng.fill_uniform(w.span<float>(), -1.5f, 1.5f);
  Value weighted = b.mul(y, b.constant(w));
  std::vector<std::int64_t> axes;
  for (std::size_t d = 0; d < shape.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  if (!axes.empty()) weighted = b.reduce_sum(weighted, axes);
  b.output(b.name(weighted, "loss"));
  return b.finish();
}

F64Bindings random_bindings(const ir::Graph& g, const Domain& d, Rng& rng) {
  F64Bindings bind;
  for (ir::Op op : {ir::Op::input, ir::Op::param})
    for (ir::ValueId id : g.nodes_of(op)) {
      const ir::Node& n = g.node(id);
      F64Tensor t{n.type.dtype, n.type.shape, {}};
      for (std::int64_t i = 0; i < shape_numel(n.type.shape); ++i) {
        if (!is_float(n.type.dtype)) {
          t.v.push_back(static_cast<double>(rng.below(2)));
          continue;
        }
        double v;
        bool near_kink;
        do {
          v = d.lo + (d.hi - d.lo) * rng.uniform_double();
          near_kink = std::any_of(d.kinks.begin(), d.kinks.end(), [&](double k) { return std::fabs(v - k) < d.gap; });
        } while (near_kink);
        t.v.push_back(v);
      }
      bind.emplace(n.name, std::move(t));
    }
  return bind;
}

std::vector<std::string> float_sources(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Node& n : g.nodes())
    if ((n.op == ir::Op::input || n.op == ir::Op::param) && is_float(n.type.dtype)) names.push_back(n.name);
  return names;
}

double finite_difference(const ir::Graph& forward, F64Bindings bindings, const std::string& name, std::int64_t i,
                         double h) {
  const std::size_t loss = [&] {
    for (std::size_t k = 0; k < forward.outputs().size(); ++k)
      if (forward.node(forward.outputs()[k]).name == "loss") return k;
    throw Error("finite_difference: no output named loss");
  }();
  double& x = bindings.at(name).v.at(static_cast<std::size_t>(i));
  const double x0 = x;
  x = x0 + h;
  const double up = run_f64(forward, bindings)[loss].v[0];
  x = x0 - h;
  const double down = run_f64(forward, bindings)[loss].v[0];
  return (up - down) / (2 * h);
}

}  // namespace orion::train::testing
