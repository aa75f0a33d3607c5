#include "ir/transforms/fold_constants.h"

#include <algorithm>

#include "ir/transforms/const_eval.h"
#include "ir/transforms/rewriter.h"

namespace orion::ir {

namespace {

bool grows(const ir::Node& n, const ir::Graph& g) {
  if (n.info().cls != ir::OpClass::binary) return false;
  std::int64_t largest = 0;
  for (ir::ValueId in : n.inputs) largest = std::max(largest, g.node(in).type.numel());
  return n.type.numel() > largest;
}

}  // namespace

int fold_constants(ir::Graph& graph) {
  GraphRewriter rw(graph);
  int folded = 0;
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    const bool all_const = !n.inputs.empty() && std::all_of(n.inputs.begin(), n.inputs.end(), [&](ir::ValueId in) {
      return rw.node(rw.map(in)).op == ir::Op::constant;
    });
    if (!all_const || !can_evaluate(n.op) || grows(n, graph)) {
      rw.copy(id);
      continue;
    }
    std::vector<Tensor> values;
    for (ir::ValueId in : n.inputs) values.push_back(rw.node(rw.map(in)).attr<Tensor>("value"));
    std::optional<Tensor> v = evaluate(n, values);
    if (!v) {
      rw.copy(id);
      continue;
    }
    rw.take_over(id, rw.constant(std::move(*v), n.name));
    ++folded;
  }
  if (folded) graph = rw.finish();
  return folded;
}

std::unique_ptr<Pass> fold_constants_pass() {
  return make_pass("fold_constants", [](ir::Graph& g, PassContext& c) {
    const int n = fold_constants(g);
    if (n) c.note("folded " + std::to_string(n) + (n == 1 ? " node" : " nodes"));
    return n > 0;
  });
}

}  // namespace orion::ir
