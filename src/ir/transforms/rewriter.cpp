#include "ir/transforms/rewriter.h"

#include "core/error.h"
#include "ir/verifier.h"

namespace orion::ir {

ir::NamedAttrs named_attrs(const ir::Node& n) {
  ir::NamedAttrs out;
  const auto specs = n.info().attrs;
  for (std::size_t i = 0; i < specs.size(); ++i) out.emplace_back(std::string(specs[i].name), n.attrs[i]);
  return out;
}

void set_attr(ir::NamedAttrs& attrs, std::string_view name, ir::AttrValue value) {
  for (auto& [k, v] : attrs)
    if (k == name) {
      v = std::move(value);
      return;
    }
  throw Error("rewriter: no attribute '" + std::string(name) + "' to set");
}

GraphRewriter::GraphRewriter(const ir::Graph& source)
    : source_(source), graph_(source.name()), map_(static_cast<std::size_t>(source.size()), -1) {
  for (const ir::Node& n : source.nodes()) source_names_.insert(n.name);
}

bool GraphRewriter::mapped(ir::ValueId old) const {
  return old >= 0 && old < source_.size() && map_[static_cast<std::size_t>(old)] >= 0;
}

ir::ValueId GraphRewriter::map(ir::ValueId old) const {
  if (!mapped(old)) {
    const std::string who =
        old >= 0 && old < source_.size() ? ir::describe(source_.node(old)) : "#" + std::to_string(old);
    throw Error("rewriter: value " + who + " is read before it was given a new value");
  }
  return map_[static_cast<std::size_t>(old)];
}

void GraphRewriter::set_map(ir::ValueId old, ir::ValueId now) {
  if (old < 0 || old >= source_.size() || now < 0 || now >= graph_.size())
    throw Error("rewriter: set_map out of range");
  map_[static_cast<std::size_t>(old)] = now;
}

std::string GraphRewriter::unique_name(std::string_view wanted) const {
  std::string name(wanted);
  for (int k = 1; names_.contains(name) || source_names_.contains(name); ++k)
    name = std::string(wanted) + "_" + std::to_string(k);
  return name;
}

ir::ValueId GraphRewriter::add(ir::Node node) {
  node.name = unique_name(node.name);
  names_.insert(node.name);
  return graph_.add(std::move(node));
}

ir::ValueId GraphRewriter::copy(ir::ValueId old) {
  ir::Node n = source_.node(old);
  for (ir::ValueId& in : n.inputs) in = map(in);
  if (names_.contains(n.name)) throw Error("rewriter: %" + n.name + " is copied twice");
  names_.insert(n.name);  // a copy keeps its own name: it was reserved for it
  const ir::ValueId now = graph_.add(std::move(n));
  set_map(old, now);
  return now;
}

ir::ValueId GraphRewriter::op(ir::Op op, std::vector<ir::ValueId> inputs, ir::NamedAttrs attrs,
                              std::string_view name) {
  ir::Node n;
  n.op = op;
  n.name = unique_name(name);
  n.inputs = std::move(inputs);
  for (ir::ValueId in : n.inputs)
    if (in < 0 || in >= graph_.size()) throw Error("rewriter: %" + n.name + " reads a value that does not exist");
  n.attrs = ir::make_attrs(op, std::move(attrs));
  try {
    n.type = ir::infer_type(graph_, n);
  } catch (const Error& e) {
    throw Error(ir::describe(n) + ": " + e.what());
  }
  names_.insert(n.name);
  return graph_.add(std::move(n));
}

ir::ValueId GraphRewriter::constant(Tensor value, std::string_view name) {
  ir::Node n;
  n.op = ir::Op::constant;
  n.name = std::string(name);
  n.type = {value.dtype(), value.shape()};
  n.attrs = ir::make_attrs(ir::Op::constant, {{"value", value.contiguous()}});
  return add(std::move(n));
}

ir::ValueId GraphRewriter::scalar(double value, DType dtype, std::string_view name) {
  const Tensor t = Tensor::scalar(static_cast<float>(value));
  return constant(dtype == DType::f32 ? t : t.to(dtype), name);
}

void GraphRewriter::take_over(ir::ValueId old, ir::ValueId now) {
  const std::string& wanted = source_.node(old).name;
  ir::Node& n = graph_.node(now);
  if (n.name != wanted) {
    if (names_.contains(wanted))
      throw Error("rewriter: %" + wanted + " is already taken by another new node");
    names_.erase(n.name);
    n.name = wanted;
    names_.insert(wanted);
  }
  set_map(old, now);
}

ir::Graph GraphRewriter::finish() {
  for (ir::ValueId out : source_.outputs()) graph_.outputs().push_back(map(out));
  return std::move(graph_);
}

}  // namespace orion::ir
