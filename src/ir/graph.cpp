#include "ir/graph.h"

#include "core/error.h"

namespace orion::ir {

std::vector<std::string> names_of(const Graph& g, std::span<const ValueId> ids) {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (ValueId id : ids) out.push_back(g.node(id).name);
  return out;
}

std::string describe(const Node& node) {
  return "%" + node.name + " (" + std::string(node.info().name) + ")";
}

void throw_wrong_attr_kind(const Node& node, std::string_view attr_name) {
  throw Error(describe(node) + ": attribute '" + std::string(attr_name) +
              "' holds a value of another kind");
}

const AttrValue& Node::attr_value(std::string_view attr_name) const {
  const int i = attr_index(op, attr_name);
  if (i < 0 || static_cast<std::size_t>(i) >= attrs.size())
    throw Error(describe(*this) + ": no attribute '" + std::string(attr_name) + "'");
  return attrs[static_cast<std::size_t>(i)];
}

ValueId Graph::add(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<ValueId>(nodes_.size() - 1);
}

std::optional<ValueId> Graph::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::vector<ValueId> Graph::nodes_of(Op op) const {
  std::vector<ValueId> ids;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == op) ids.push_back(static_cast<ValueId>(i));
  return ids;
}

std::vector<ValueId> Graph::topological_order() const {
  // Iterative DFS: graphs of large models are deep enough to overflow a recursive one.
  enum class Mark : std::uint8_t { none, active, done };
  std::vector<Mark> mark(nodes_.size(), Mark::none);
  std::vector<ValueId> order;
  order.reserve(nodes_.size());
  std::vector<std::pair<ValueId, std::size_t>> stack;
  for (std::size_t root = 0; root < nodes_.size(); ++root) {
    if (mark[root] != Mark::none) continue;
    stack.emplace_back(static_cast<ValueId>(root), 0);
    mark[root] = Mark::active;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& n = nodes_[static_cast<std::size_t>(id)];
      if (next < n.inputs.size()) {
        const ValueId in = n.inputs[next++];
        if (in < 0 || static_cast<std::size_t>(in) >= nodes_.size())
          throw Error(describe(n) + ": input refers to value #" + std::to_string(in) +
                      ", which does not exist");
        const std::size_t u = static_cast<std::size_t>(in);
        if (mark[u] == Mark::active)
          throw Error(describe(n) + ": is part of a cycle through " + describe(nodes_[u]));
        if (mark[u] == Mark::none) {
          mark[u] = Mark::active;
          stack.emplace_back(in, 0);
        }
      } else {
        mark[static_cast<std::size_t>(id)] = Mark::done;
        order.push_back(id);
        stack.pop_back();
      }
    }
  }
  return order;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(nodes_.size(), 0);
  for (const Node& n : nodes_)
    for (ValueId in : n.inputs)
      if (in >= 0 && static_cast<std::size_t>(in) < nodes_.size()) ++uses[static_cast<std::size_t>(in)];
  for (ValueId out : outputs_)
    if (out >= 0 && static_cast<std::size_t>(out) < nodes_.size()) ++uses[static_cast<std::size_t>(out)];
  return uses;
}

}  // namespace orion::ir
