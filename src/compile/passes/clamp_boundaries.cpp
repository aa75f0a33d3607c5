#include "compile/passes/clamp_boundaries.h"

#include "ir/transforms/rewriter.h"
#include "compile/passes/to_fp16.h"

namespace orion::compile {

namespace {

bool clamp_within_range(const ir::Node& n) {
  return n.op == ir::Op::clamp && n.attr_real("min") >= -kFp16Max && n.attr_real("max") <= kFp16Max;
}

// Whether the value of `n` may lie outside +-65504 (sources are handled by the caller).
bool may_overflow(const ir::Node& n) {
  switch (n.op) {
    case ir::Op::sigmoid: case ir::Op::tanh: case ir::Op::softmax: return false;
    default: return !clamp_within_range(n);
  }
}

ir::NamedAttrs clamp_attrs() { return {{"min", -kFp16Max}, {"max", kFp16Max}}; }

}  // namespace

ClampCounts clamp_boundaries(ir::Graph& graph, const WeightInputs* weights) {
  const auto size = static_cast<std::size_t>(graph.size());
  std::vector<bool> is_output(size, false);
  for (ir::ValueId out : graph.outputs()) is_output[static_cast<std::size_t>(out)] = true;
  // An input whose every reader is an in-range clamp has been clamped already.
  std::vector<bool> clamped_reader_only(size, true);
  std::vector<bool> has_reader(size, false);
  for (const ir::Node& n : graph.nodes())
    for (ir::ValueId in : n.inputs) {
      has_reader[static_cast<std::size_t>(in)] = true;
      if (!clamp_within_range(n)) clamped_reader_only[static_cast<std::size_t>(in)] = false;
    }

  ir::GraphRewriter rw(graph);
  ClampCounts counts;
  std::vector<ir::ValueId> own(size, -1);         // a node's own (unclamped) new value
  std::vector<ir::ValueId> out_clamp(size, -1);   // the clamp an output leaves through
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    const auto u = static_cast<std::size_t>(id);
    const bool is_float_value = is_float(n.type.dtype);
    const bool weight = weights && weights->contains(n.name);
    if (n.op == ir::Op::input && is_float_value && has_reader[u] && !clamped_reader_only[u] && !weight) {
      own[u] = rw.copy(id);
      rw.set_map(id, rw.op(ir::Op::clamp, {own[u]}, clamp_attrs(), n.name + ".clamped"));
      ++counts.inputs;
    } else if (is_output[u] && is_float_value && n.info().cls != ir::OpClass::source && may_overflow(n)) {
      ir::Node copy = n;
      for (ir::ValueId& in : copy.inputs) in = rw.map(in);
      copy.name = n.name + ".unclamped";
      own[u] = rw.add(std::move(copy));
      const ir::ValueId c = rw.op(ir::Op::clamp, {own[u]}, clamp_attrs(), n.name + ".clamp");
      rw.take_over(id, c);
      rw.set_map(id, own[u]);  // the graph's own readers keep the unclamped value
      out_clamp[u] = c;
      ++counts.outputs;
    } else {
      own[u] = rw.copy(id);
    }
  }
  if (counts.inputs + counts.outputs == 0) return counts;
  const std::vector<ir::ValueId> old_outputs = graph.outputs();
  graph = rw.finish();
  for (std::size_t i = 0; i < old_outputs.size(); ++i) {
    const auto u = static_cast<std::size_t>(old_outputs[i]);
    graph.outputs()[i] = out_clamp[u] >= 0 ? out_clamp[u] : own[u];
  }
  return counts;
}

std::unique_ptr<ir::Pass> clamp_boundaries_pass(const WeightInputs* weights) {
  return ir::make_pass("clamp_boundaries", [weights](ir::Graph& g, ir::PassContext& c) {
    const ClampCounts k = clamp_boundaries(g, weights);
    if (k.inputs + k.outputs == 0) return false;
    c.note("clamped " + std::to_string(k.inputs) + " inputs and " + std::to_string(k.outputs) + " outputs to +-65504");
    return true;
  });
}

}  // namespace orion::compile
