#include "compile/ane/ane_lowering.h"

#include "compile/passes/clamp_boundaries.h"
#include "ir/transforms/cse.h"
#include "ir/transforms/dce.h"
#include "ir/transforms/fold_constants.h"
#include "compile/passes/lower_layout.h"
#include "compile/passes/quantize_weights.h"
#include "compile/passes/to_fp16.h"

namespace orion::compile {

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
  if (four_bit) p.add(quantize_weights_pass(t.weights, t.weight_block, options.dialect, model_weights)).add(ir::dce_pass());
  ir::PipelineOptions po;
  po.after_pass = options.after_pass;
  out.diagnostics = p.run(out.graph, po).diagnostics;
  out.warnings = validate_kernel_graph(out.graph, options.target, options.kernel_name);
  return out;
}

}  // namespace orion::compile
