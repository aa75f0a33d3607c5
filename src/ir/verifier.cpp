#include "ir/verifier.h"

#include <unordered_set>

#include "core/error.h"

namespace orion::ir {

namespace {

bool valid_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto tail = [&](char c) { return head(c) || (c >= '0' && c <= '9') || c == '.'; };
  if (!head(s[0])) return false;
  for (char c : s)
    if (!tail(c)) return false;
  return true;
}

bool input_in_range(const Graph& g, ValueId id) { return id >= 0 && id < g.size(); }

}  // namespace

TensorType infer_type(const Graph& graph, const Node& node) {
  const OpInfo& info = node.info();
  if (!info.type_rule) return node.type;
  std::vector<TensorType> in;
  in.reserve(node.inputs.size());
  for (ValueId id : node.inputs) in.push_back(graph.node(id).type);
  return info.type_rule(in, node);
}

std::vector<AttrValue> make_attrs(Op op, std::vector<std::pair<std::string, AttrValue>> given) {
  const OpInfo& info = op_info(op);
  std::vector<AttrValue> out;
  std::vector<bool> set(info.attrs.size(), false);
  out.reserve(info.attrs.size());
  for (const AttrSpec& spec : info.attrs) out.push_back(attr_default(spec));
  for (auto& [name, value] : given) {
    const int i = attr_index(op, name);
    if (i < 0)
      throw Error(std::string(info.name) + " has no attribute '" + name + "'");
    const auto u = static_cast<std::size_t>(i);
    if (set[u]) throw Error(std::string(info.name) + ": attribute '" + name + "' given twice");
    const AttrSpec& spec = info.attrs[u];
    if (spec.kind == AttrKind::real && attr_kind_of(value) == AttrKind::integer)
      value = static_cast<double>(std::get<std::int64_t>(value));
    if (attr_kind_of(value) != spec.kind)
      throw Error(std::string(info.name) + ": attribute '" + name + "' must be " +
                  std::string(attr_kind_name(spec.kind)) + ", not " +
                  std::string(attr_kind_name(attr_kind_of(value))));
    out[u] = std::move(value);
    set[u] = true;
  }
  for (std::size_t i = 0; i < info.attrs.size(); ++i)
    if (info.attrs[i].required && !set[i])
      throw Error(std::string(info.name) + ": attribute '" + std::string(info.attrs[i].name) +
                  "' is required");
  return out;
}

std::vector<std::string> check_graph(const Graph& graph) {
  std::vector<std::string> problems;
  if (!valid_identifier(graph.name()))
    problems.push_back("graph '" + graph.name() + "': the graph's name is not a valid identifier");
  std::unordered_set<std::string> names;
  for (const Node& n : graph.nodes()) {
    const OpInfo& info = n.info();
    const std::string who = describe(n);
    if (!valid_identifier(n.name)) problems.push_back(who + ": '" + n.name + "' is not a valid name");
    if (!names.insert(n.name).second) problems.push_back(who + ": the name is used by another node");
    const int arity = static_cast<int>(n.inputs.size());
    if (arity < info.min_inputs || (info.max_inputs >= 0 && arity > info.max_inputs)) {
      const std::string want = info.max_inputs < 0 ? "at least " + std::to_string(info.min_inputs)
                               : info.min_inputs == info.max_inputs ? std::to_string(info.min_inputs)
                               : std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs);
      problems.push_back(who + ": takes " + want + " inputs, has " + std::to_string(arity));
      continue;
    }
    bool dangling = false;
    for (ValueId in : n.inputs)
      if (!input_in_range(graph, in)) {
        problems.push_back(who + ": input refers to value #" + std::to_string(in) + ", which does not exist");
        dangling = true;
      }
    if (dangling) continue;
    // Nodes follow their inputs (SSA order): the text form and every pass rely on it.
    const auto self = static_cast<ValueId>(&n - graph.nodes().data());
    for (ValueId in : n.inputs)
      if (in >= self)
        problems.push_back(who + ": uses " + describe(graph.node(in)) +
                           (in == self ? ", itself" : ", which comes after it (nodes must follow their inputs)"));
    if (n.attrs.size() != info.attrs.size()) {
      problems.push_back(who + ": has " + std::to_string(n.attrs.size()) + " attributes, the op declares " +
                         std::to_string(info.attrs.size()));
      continue;
    }
    bool attrs_ok = true;
    for (std::size_t i = 0; i < info.attrs.size(); ++i)
      if (attr_kind_of(n.attrs[i]) != info.attrs[i].kind) {
        problems.push_back(who + ": attribute '" + std::string(info.attrs[i].name) + "' must be " +
                           std::string(attr_kind_name(info.attrs[i].kind)));
        attrs_ok = false;
      }
    if (!attrs_ok) continue;
    for (std::int64_t d : n.type.shape)
      if (d < 0) problems.push_back(who + ": type " + n.type.str() + " has a negative dimension");
    if (n.op == Op::constant) {
      const Tensor& v = n.attr<Tensor>("value");
      if (!v.defined() || v.dtype() != n.type.dtype || v.shape() != n.type.shape)
        problems.push_back(who + ": value does not match the declared type " + n.type.str());
      continue;
    }
    try {
      const TensorType t = infer_type(graph, n);
      if (t != n.type)
        problems.push_back(who + ": declared type " + n.type.str() + " but the inputs give " + t.str());
    } catch (const Error& e) {
      problems.push_back(who + ": " + e.what());
    }
  }
  try {
    graph.topological_order();
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  if (graph.outputs().empty()) problems.push_back("graph " + graph.name() + ": has no outputs");
  for (ValueId out : graph.outputs())
    if (!input_in_range(graph, out))
      problems.push_back("graph " + graph.name() + ": output refers to value #" + std::to_string(out) +
                         ", which does not exist");
  return problems;
}

void verify(const Graph& graph) {
  const auto problems = check_graph(graph);
  if (problems.empty()) return;
  std::string msg = problems.front();
  if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problems)";
  throw Error(msg);
}

}  // namespace orion::ir
