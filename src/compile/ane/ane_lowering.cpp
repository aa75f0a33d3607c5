#include "compile/ane/ane_lowering.h"

#include "compile/passes/clamp_boundaries.h"
#include "ir/transforms/cse.h"
#include "ir/transforms/dce.h"
#include "ir/transforms/fold_constants.h"
#include "compile/passes/lower_layout.h"
#include "compile/passes/quantize_weights.h"
#include "compile/passes/to_fp16.h"

namespace orion::compile {

namespace {

// The given 4-bit weights `graph` reads, by the names its weights have after lowering: its params',
// and the row ranges chunk_matmuls sliced from them (a vocabulary head in pieces).
Int4Weights given_weights_of(const ir::Graph& graph, const Int4Weights& given) {
  Int4Weights out;
  for (const ir::Node& n : graph.nodes()) {
    if (n.op == ir::Op::param) {
      if (auto it = given.find(n.name); it != given.end()) out.emplace(n.name, it->second);
      continue;
    }
    if (n.op != ir::Op::slice || graph.node(n.inputs[0]).op != ir::Op::param) continue;
    const auto it = given.find(graph.node(n.inputs[0]).name);
    const std::vector<std::int64_t>& b = n.attr_ints("begin");
    const std::vector<std::int64_t>& e = n.attr_ints("end");
    if (it == given.end() || b.size() != 2 || b[1] != 0 || e[1] != it->second.values.dim(1)) continue;
    const Int4Weight& w = it->second;
    Int4Weight rows{w.values.slice(0, b[0], e[0]), w.scale.slice(0, b[0], e[0]), std::nullopt};
    if (w.offset) rows.offset = w.offset->slice(0, b[0], e[0]);
    out.emplace(n.name, std::move(rows));
  }
  return out;
}

}  // namespace

AneLowered lower_for_ane(const ir::Graph& graph, const TensorMap& weights, const AneLoweringOptions& options) {
  AneLowered out{graph, {}, {}, {}};
  WeightInputs runtime;  // filled by lower_layout, read by legalize_io
  LegalizeIoOptions io = options.io;
  io.weights = &runtime;
  ir::Pipeline p;
  p.add(ir::bind_params_pass(weights, {.require_all = !options.runtime_weights}));
  p.add(ir::fold_constants_pass()).add(legalize_pass(options.legalize));
  p.add(lower_layout_pass(&runtime)).add(legalize_io_pass(out.io, io)).add(ir::cse_pass({.merge_tensor_constants = !options.weights_vary})).add(ir::dce_pass());
  p.add(clamp_boundaries_pass(&runtime));
  const AneTarget& t = options.target;
  const bool four_bit = t.weights == WeightForm::int4 || t.weights == WeightForm::uint4 || t.weights == WeightForm::lut4;
  std::unordered_set<std::string> model_weights;
  if (t.weights != WeightForm::fp16) model_weights = model_weight_names(graph);
  if (t.weights == WeightForm::int8)
    p.add(quantize_weights_pass(t.weights, t.weight_block, options.dialect, model_weights)).add(ir::dce_pass());
  p.add(to_fp16_pass()).add(ir::fold_constants_pass());
  const Int4Weights given = options.given_int4 ? given_weights_of(graph, *options.given_int4) : Int4Weights{};
  if (four_bit)
    p.add(quantize_weights_pass(t.weights, t.weight_block, options.dialect, model_weights, given.empty() ? nullptr : &given))
        .add(ir::dce_pass());
  ir::PipelineOptions po;
  po.after_pass = options.after_pass;
  out.diagnostics = p.run(out.graph, po).diagnostics;
  out.warnings = validate_kernel_graph(out.graph, options.target, options.kernel_name);
  return out;
}

}  // namespace orion::compile
