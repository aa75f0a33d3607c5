#include "ir/builder.h"

#include "core/error.h"
#include "ir/verifier.h"

namespace orion::ir {

void Builder::push_scope(std::string prefix) { scopes_.push_back(std::move(prefix)); }

void Builder::pop_scope() {
  if (scopes_.empty()) throw Error("builder: pop_scope without push_scope");
  scopes_.pop_back();
}

std::string Builder::scoped(const std::string& name) const {
  std::string s;
  for (const std::string& p : scopes_) s += p + ".";
  return s + name;
}

std::string Builder::fresh_name(std::string_view base) {
  // The counter makes names unique without a lookup; readable names come from name().
  return scoped(std::string(base) + "_" + std::to_string(counter_++));
}

Value Builder::name(Value v, const std::string& name) {
  const std::string full = scoped(name);
  if (auto other = graph_.find(full); other && *other != v.id)
    throw Error("builder: the name %" + full + " is already used");
  graph_.node(v.id).name = full;
  return v;
}

Value Builder::add_source(Op op, const std::string& name, TensorType type, NamedAttrs attrs) {
  Node n;
  n.op = op;
  n.name = name;
  n.type = std::move(type);
  n.attrs = make_attrs(op, std::move(attrs));
  if (graph_.find(n.name)) throw Error("builder: the name %" + n.name + " is already used");
  return Value{graph_.add(std::move(n))};
}

Value Builder::input(const std::string& name, DType dtype, Shape shape) {
  return add_source(Op::input, name, {dtype, std::move(shape)}, {});
}

Value Builder::param(const std::string& name, DType dtype, Shape shape) {
  return add_source(Op::param, scoped(name), {dtype, std::move(shape)}, {});
}

Value Builder::constant(Tensor value) {
  TensorType t{value.dtype(), value.shape()};
  return add_source(Op::constant, fresh_name("const"), std::move(t), {{"value", std::move(value)}});
}

Value Builder::scalar(float value, DType dtype) {
  Tensor t = Tensor::scalar(value);
  return constant(dtype == DType::f32 ? t : t.to(dtype));
}

Value Builder::op(Op op, const std::vector<Value>& inputs, NamedAttrs attrs) {
  const OpInfo& info = op_info(op);
  if (info.cls == OpClass::source)
    throw Error("builder: use input(), param() or constant() for " + std::string(info.name));
  Node n;
  n.op = op;
  n.name = fresh_name(info.name);
  for (Value v : inputs) {
    if (v.id < 0 || v.id >= graph_.size())
      throw Error("builder: " + std::string(info.name) + " given a value of another builder");
    n.inputs.push_back(v.id);
  }
  const int arity = static_cast<int>(inputs.size());
  if (arity < info.min_inputs || (info.max_inputs >= 0 && arity > info.max_inputs))
    throw Error("builder: " + std::string(info.name) + " given " + std::to_string(arity) + " inputs");
  n.attrs = make_attrs(op, std::move(attrs));
  try {
    n.type = infer_type(graph_, n);
  } catch (const Error& e) {
    throw Error(describe(n) + ": " + e.what());
  }
  return Value{graph_.add(std::move(n))};
}

ValueId append_op(Graph& g, Op op, std::vector<ValueId> inputs, NamedAttrs attrs, std::string name) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.attrs = make_attrs(op, std::move(attrs));
  try {
    n.type = infer_type(g, n);
  } catch (const Error& e) {
    throw Error(describe(n) + ": " + e.what());
  }
  return g.add(std::move(n));
}

Value Builder::matmul(Value x, Value y, bool transpose_x, bool transpose_y) {
  return op(Op::matmul, {x, y}, {{"transpose_x", transpose_x}, {"transpose_y", transpose_y}});
}

Value Builder::conv(Value x, Value weight, std::vector<std::int64_t> strides,
                    std::vector<std::int64_t> pads, std::vector<std::int64_t> dilations,
                    std::int64_t groups) {
  return op(Op::conv, {x, weight},
            {{"strides", std::move(strides)}, {"pads", std::move(pads)},
             {"dilations", std::move(dilations)}, {"groups", groups}});
}

Value Builder::softmax(Value x, std::int64_t axis) { return op(Op::softmax, {x}, {{"axis", axis}}); }

Value Builder::layer_norm(Value x, Value gamma, Value beta, double epsilon) {
  return op(Op::layer_norm, {x, gamma, beta}, {{"epsilon", epsilon}});
}

Value Builder::rms_norm(Value x, Value weight, double epsilon) {
  return op(Op::rms_norm, {x, weight}, {{"epsilon", epsilon}});
}

Value Builder::reduce_sum(Value x, std::vector<std::int64_t> axes, bool keep_dims) {
  return op(Op::reduce_sum, {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}});
}

Value Builder::reduce_mean(Value x, std::vector<std::int64_t> axes, bool keep_dims) {
  return op(Op::reduce_mean, {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}});
}

Value Builder::reduce_max(Value x, std::vector<std::int64_t> axes, bool keep_dims) {
  return op(Op::reduce_max, {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}});
}

Value Builder::reshape(Value x, std::vector<std::int64_t> shape) {
  return op(Op::reshape, {x}, {{"shape", std::move(shape)}});
}

Value Builder::transpose(Value x, std::vector<std::int64_t> perm) {
  return op(Op::transpose, {x}, {{"perm", std::move(perm)}});
}

Value Builder::slice(Value x, std::vector<std::int64_t> begin, std::vector<std::int64_t> end) {
  return op(Op::slice, {x}, {{"begin", std::move(begin)}, {"end", std::move(end)}});
}

Value Builder::concat(const std::vector<Value>& xs, std::int64_t axis) {
  return op(Op::concat, xs, {{"axis", axis}});
}

Value Builder::gather(Value table, Value indices, std::int64_t axis) {
  return op(Op::gather, {table, indices}, {{"axis", axis}});
}

Value Builder::scatter_add(Value updates, Value indices, std::int64_t size, std::int64_t axis) {
  return op(Op::scatter_add, {updates, indices}, {{"axis", axis}, {"size", size}});
}

Value Builder::broadcast_to(Value x, std::vector<std::int64_t> shape) {
  return op(Op::broadcast_to, {x}, {{"shape", std::move(shape)}});
}

Value Builder::cast(Value x, DType dtype) { return op(Op::cast, {x}, {{"dtype", dtype}}); }

Value Builder::clamp(Value x, double min, double max) {
  return op(Op::clamp, {x}, {{"min", min}, {"max", max}});
}

Graph Builder::finish() {
  verify(graph_);
  Graph g = std::move(graph_);
  graph_ = Graph(g.name());
  scopes_.clear();
  counter_ = 0;
  return g;
}

}  // namespace orion::ir
