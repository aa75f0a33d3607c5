#include "train/autodiff.h"

#include <algorithm>
#include <set>
#include <vector>

#include "ir/transforms/dce.h"
#include "core/error.h"
#include "ir/builder.h"
#include "ir/grad_rules.h"
#include "ir/verifier.h"

namespace orion::train {

namespace {

using ir::Builder;
using ir::Graph;
using ir::Node;
using ir::Op;
using ir::Value;
using ir::ValueId;

[[noreturn]] void fail(const Graph& g, const std::string& what) {
  throw Error("gradient_graph of graph " + g.name() + ": " + what);
}

ir::NamedAttrs named_attrs(const Node& n) {
  ir::NamedAttrs attrs;
  const auto specs = n.info().attrs;
  for (std::size_t i = 0; i < specs.size(); ++i) attrs.emplace_back(std::string(specs[i].name), n.attrs[i]);
  return attrs;
}

// Copies `forward` into `b`, names and all; returns the builder's value of every node.
std::vector<Value> copy_graph(Builder& b, const Graph& forward) {
  std::vector<Value> map(static_cast<std::size_t>(forward.size()));
  for (ValueId id : forward.topological_order()) {
    const Node& n = forward.node(id);
    Value v;
    switch (n.op) {
      case Op::input: v = b.input(n.name, n.type.dtype, n.type.shape); break;
      case Op::param: v = b.param(n.name, n.type.dtype, n.type.shape); break;
      case Op::constant: v = b.name(b.constant(n.attr<Tensor>("value")), n.name); break;
      default: {
        std::vector<Value> ins;
        for (ValueId i : n.inputs) ins.push_back(map[static_cast<std::size_t>(i)]);
        v = b.name(b.op(n.op, ins, named_attrs(n)), n.name);
      }
    }
    map[static_cast<std::size_t>(id)] = v;
  }
  return map;
}

// The float values through which the loss depends on any of `from`: reachable from them and
// read (directly or not) by the loss.
std::vector<bool> on_path(const Graph& g, const std::vector<ValueId>& order, ValueId loss,
                          const std::vector<ValueId>& from) {
  const auto n = static_cast<std::size_t>(g.size());
  std::vector<bool> reach(n, false), feeds(n, false), path(n, false);
  for (ValueId id : from) reach[static_cast<std::size_t>(id)] = true;
  for (ValueId id : order) {
    const Node& node = g.node(id);
    if (!is_float(node.type.dtype)) continue;
    for (ValueId i : node.inputs)
      if (reach[static_cast<std::size_t>(i)]) reach[static_cast<std::size_t>(id)] = true;
  }
  feeds[static_cast<std::size_t>(loss)] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (feeds[static_cast<std::size_t>(*it)])
      for (ValueId i : g.node(*it).inputs) feeds[static_cast<std::size_t>(i)] = true;
  for (std::size_t i = 0; i < n; ++i) path[i] = reach[i] && feeds[i];
  return path;
}

Value sum(Builder& b, const std::vector<Value>& terms) {
  Value s = terms.front();
  for (std::size_t i = 1; i < terms.size(); ++i) s = b.add(s, terms[i]);
  return s;
}

}  // namespace

ir::Graph gradient_graph(const ir::Graph& forward, std::string_view loss, std::span<const std::string> wrt,
                         const GradientOptions& options) {
  ir::verify(forward);
  std::optional<ValueId> loss_id;
  for (ValueId id : forward.outputs())
    if (forward.node(id).name == loss) loss_id = id;
  if (!loss_id) fail(forward, "no output is named %" + std::string(loss));
  const ir::TensorType& lt = forward.node(*loss_id).type;
  if (lt.dtype != DType::f32 || !(lt.shape.empty() || lt.shape == Shape{1}))
    fail(forward, "the loss %" + std::string(loss) + " must be an f32 scalar (rank 0 or [1]), not " + lt.str());

  std::vector<ValueId> targets;
  std::set<std::string, std::less<>> seen;
  for (const std::string& name : wrt) {
    const std::optional<ValueId> id = forward.find(name);
    if (!id || (forward.node(*id).op != Op::param && forward.node(*id).op != Op::input))
      fail(forward, "%" + name + " (asked for its gradient) is not a param or input");
    if (!is_float(forward.node(*id).type.dtype))
      fail(forward, "%" + name + " (asked for its gradient) is " + forward.node(*id).type.str() + ", not a float");
    if (!seen.insert(name).second) fail(forward, "the gradient of %" + name + " is asked for twice");
    targets.push_back(*id);
  }

  Builder b(forward.name() + ".grad");
  const std::vector<Value> map = copy_graph(b, forward);
  const std::vector<ValueId> order = forward.topological_order();
  const std::vector<bool> path = on_path(forward, order, *loss_id, targets);

  Value seed = b.scalar(1.0f);
  if (!options.seed_input.empty()) {
    if (forward.find(options.seed_input)) fail(forward, "the seed input %" + options.seed_input + " is a name the graph uses");
    seed = b.input(options.seed_input, DType::f32, {});
  }
  if (!lt.shape.empty()) seed = b.reshape(seed, {1});

  b.push_scope("grad");
  std::vector<std::vector<Value>> grads(static_cast<std::size_t>(forward.size()));
  grads[static_cast<std::size_t>(*loss_id)].push_back(seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto u = static_cast<std::size_t>(*it);
    const Node& n = forward.node(*it);
    if (!path[u] || grads[u].empty() || n.info().cls == ir::OpClass::source) continue;
    if (n.info().grad == nullptr)
      fail(forward, ir::describe(n) + " lies between the loss and the requested gradients and takes no gradient (" +
                        std::string(n.info().no_grad) + ")");
    std::vector<Value> ins;
    for (ValueId i : n.inputs) ins.push_back(map[static_cast<std::size_t>(i)]);
    Value g = sum(b, grads[u]);
    if (!options.name_gradients_of.empty() && n.name.starts_with(options.name_gradients_of) && g.id != seed.id &&
        std::none_of(map.begin(), map.end(), [&](const Value& v) { return v.id == g.id; }))
      g = b.name(g, "at." + n.name);  // in the "grad" scope: "grad.at.layer_out.3"
    const ir::grad::Grads dins = n.info().grad(b, n, ins, map[u], g);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const auto in = static_cast<std::size_t>(n.inputs[k]);
      if (!path[in] || k >= dins.size() || !dins[k]) continue;
      if (b.type(*dins[k]) != forward.node(n.inputs[k]).type)
        fail(forward, "the gradient rule of " + ir::describe(n) + " gave " + b.type(*dins[k]).str() +
                          " for its input " + std::to_string(k) + " of type " + forward.node(n.inputs[k]).type.str());
      grads[in].push_back(*dins[k]);
    }
  }
  b.pop_scope();

  for (ValueId id : forward.outputs()) b.output(map[static_cast<std::size_t>(id)]);
  // Each gradient output gets a node of its own: a gradient may be a value that is already
  // named (the seed input, a forward value) or that is the gradient of another target too.
  std::set<ValueId> claimed;
  for (const Value& v : map) claimed.insert(v.id);
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const Node& n = forward.node(targets[t]);
    const auto& terms = grads[static_cast<std::size_t>(targets[t])];
    std::vector<std::int64_t> shape(n.type.shape.begin(), n.type.shape.end());
    Value g = terms.empty() ? b.broadcast_to(b.scalar(0.0f), shape) : sum(b, terms);
    if (b.type(g).dtype != DType::f32) g = b.cast(g, DType::f32);
    if (claimed.count(g.id) || g.id == seed.id) g = b.reshape(g, shape);
    claimed.insert(g.id);
    b.output(b.name(g, "grad." + n.name));
  }
  Graph out = b.finish();
  ir::dce(out);
  ir::verify(out);
  return out;
}

}  // namespace orion::train
