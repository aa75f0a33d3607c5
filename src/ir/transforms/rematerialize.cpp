#include "ir/transforms/rematerialize.h"

#include <algorithm>

#include "ir/transforms/rewriter.h"

namespace orion::ir {

namespace {

bool widens_constants(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::Op::dequantize_affine) return false;
  for (ir::ValueId in : n.inputs)
    if (g.node(in).op != ir::Op::constant) return false;
  return true;
}

}  // namespace

bool has_shared_widened_constants(const ir::Graph& graph) {
  std::vector<int> readers(static_cast<std::size_t>(graph.size()), 0);
  for (const ir::Node& n : graph.nodes())
    for (ir::ValueId in : n.inputs) ++readers[static_cast<std::size_t>(in)];
  for (ir::ValueId out : graph.outputs()) ++readers[static_cast<std::size_t>(out)];
  for (ir::ValueId id = 0; id < graph.size(); ++id)
    if (readers[static_cast<std::size_t>(id)] > 1 && widens_constants(graph, graph.node(id))) return true;
  return false;
}

ir::Graph rematerialize(const ir::Graph& graph) {
  if (!has_shared_widened_constants(graph)) return graph;
  GraphRewriter rw(graph);
  std::vector<bool> deferred(static_cast<std::size_t>(graph.size()), false);
  // A fresh copy of deferred value `old`, which later reads of it read until the next copy.
  const auto emit = [&](ir::ValueId old) {
    const ir::Node& n = graph.node(old);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId in : n.inputs) inputs.push_back(rw.map(in));
    rw.set_map(old, rw.op(n.op, std::move(inputs), named_attrs(n), n.name));
  };
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    if (widens_constants(graph, n)) {
      deferred[static_cast<std::size_t>(id)] = true;
      continue;
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId in = n.inputs[i];
      const bool again = std::find(n.inputs.begin(), n.inputs.begin() + static_cast<std::ptrdiff_t>(i), in) !=
                         n.inputs.begin() + static_cast<std::ptrdiff_t>(i);
      if (deferred[static_cast<std::size_t>(in)] && !again) emit(in);
    }
    rw.copy(id);
  }
  for (ir::ValueId out : graph.outputs())
    if (deferred[static_cast<std::size_t>(out)]) emit(out);
  return rw.finish();
}

}  // namespace orion::ir
