#include "compile/passes/legalize.h"

#include <map>

#include "ir/transforms/rewriter.h"

namespace orion::compile {

namespace {

// Rewritten nodes by op, for the pass's note.
using Counts = std::map<std::string_view, int>;

int legalize_counted(ir::Graph& graph, const LegalizeOptions& options, Counts& counts) {
  ir::GraphRewriter rw(graph);
  int rewritten = 0;
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    auto in = [&](std::size_t i) { return rw.map(n.inputs[i]); };
    ir::ValueId now = -1;
    switch (n.op) {
      case ir::Op::gelu: now = expand_gelu(rw, in(0), n.name, options.gelu_form); break;
      case ir::Op::silu: now = expand_silu(rw, in(0), n.name); break;
      case ir::Op::layer_norm:
        now = expand_layer_norm(rw, in(0), in(1), in(2), n.attr_real("epsilon"), -1, n.name);
        break;
      case ir::Op::rms_norm:
        now = expand_rms_norm(rw, in(0), in(1), n.attr_real("epsilon"), -1, n.name);
        break;
      case ir::Op::neg: now = expand_neg(rw, in(0), n.name); break;
      case ir::Op::rsqrt: now = expand_rsqrt(rw, in(0), n.name); break;
      default: rw.copy(id); continue;
    }
    rw.take_over(id, now);
    ++counts[n.info().name];
    ++rewritten;
  }
  if (rewritten) graph = rw.finish();
  return rewritten;
}

}  // namespace

int legalize(ir::Graph& graph, const LegalizeOptions& options) {
  Counts counts;
  return legalize_counted(graph, options, counts);
}

std::unique_ptr<ir::Pass> legalize_pass(LegalizeOptions options) {
  return ir::make_pass("legalize", [options](ir::Graph& g, ir::PassContext& c) {
    Counts counts;
    const int n = legalize_counted(g, options, counts);
    if (n == 0) return false;
    std::string msg = "rewrote";
    for (const auto& [op, k] : counts) msg += " " + std::to_string(k) + " " + std::string(op) + ",";
    msg.pop_back();
    c.note(msg);
    return true;
  });
}

}  // namespace orion::compile
