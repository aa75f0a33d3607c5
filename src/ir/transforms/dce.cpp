#include "ir/transforms/dce.h"

#include "ir/transforms/rewriter.h"

namespace orion::ir {

bool dce(ir::Graph& graph, const DceOptions& options) {
  // Nodes follow their inputs, so one backward sweep marks everything the outputs reach.
  std::vector<bool> live(static_cast<std::size_t>(graph.size()), false);
  for (ir::ValueId out : graph.outputs()) live[static_cast<std::size_t>(out)] = true;
  for (ir::ValueId id = graph.size(); id-- > 0;) {
    const ir::Node& n = graph.node(id);
    if (options.keep_unused_inputs && n.op == ir::Op::input) live[static_cast<std::size_t>(id)] = true;
    if (!live[static_cast<std::size_t>(id)]) continue;
    for (ir::ValueId in : n.inputs) live[static_cast<std::size_t>(in)] = true;
  }
  bool removed = false;
  GraphRewriter rw(graph);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    if (live[static_cast<std::size_t>(id)]) rw.copy(id);
    else removed = true;
  }
  if (!removed) return false;
  graph = rw.finish();
  return true;
}

std::unique_ptr<Pass> dce_pass(DceOptions options) {
  return make_pass("dce", [options](ir::Graph& g, PassContext&) { return dce(g, options); });
}

}  // namespace orion::ir
