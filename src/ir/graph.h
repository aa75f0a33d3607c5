#pragma once
// Graph: a static-shape dataflow program. Every node produces one value, named by `name`
// (the `%name` of the text form) and identified by its index (ValueId). Inputs and params are
// bound by name when the graph runs.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/attr.h"
#include "ir/op_table.h"
#include "ir/type.h"

namespace orion::ir {

using ValueId = std::int32_t;

struct Node {
  Op op = Op::input;
  std::string name;
  std::vector<ValueId> inputs;
  std::vector<AttrValue> attrs;  // one per op_info(op).attrs, in that order
  TensorType type;

  const OpInfo& info() const { return op_info(op); }
  // The value of attribute `name`; throws orion::Error if the op has no such attribute or the
  // stored value is of another kind.
  template <class T> const T& attr(std::string_view attr_name) const;
  std::int64_t attr_int(std::string_view n) const { return attr<std::int64_t>(n); }
  double attr_real(std::string_view n) const { return attr<double>(n); }
  bool attr_bool(std::string_view n) const { return attr<bool>(n); }
  const std::vector<std::int64_t>& attr_ints(std::string_view n) const {
    return attr<std::vector<std::int64_t>>(n);
  }

 private:
  const AttrValue& attr_value(std::string_view attr_name) const;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Appends a node as given (no checks: run the verifier). Returns its id.
  ValueId add(Node node);
  int size() const { return static_cast<int>(nodes_.size()); }
  const Node& node(ValueId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  Node& node(ValueId id) { return nodes_.at(static_cast<std::size_t>(id)); }
  std::span<const Node> nodes() const { return nodes_; }
  std::span<Node> nodes() { return nodes_; }

  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& outputs() { return outputs_; }

  std::optional<ValueId> find(std::string_view name) const;
  // The ids of all nodes of one op (e.g. every input or param), in node order.
  std::vector<ValueId> nodes_of(Op op) const;

  // Node ids with every node after its inputs; throws orion::Error naming a node on a cycle.
  std::vector<ValueId> topological_order() const;
  // How many times each value is read (by nodes and by the output list).
  std::vector<int> use_counts() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
};

// "%name (op)": how messages refer to a node.
std::string describe(const Node& node);

// The names of nodes `ids` of `g`, in that order.
std::vector<std::string> names_of(const Graph& g, std::span<const ValueId> ids);

[[noreturn]] void throw_wrong_attr_kind(const Node& node, std::string_view attr_name);

template <class T> const T& Node::attr(std::string_view attr_name) const {
  const AttrValue& v = attr_value(attr_name);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw_wrong_attr_kind(*this, attr_name);
}

}  // namespace orion::ir
