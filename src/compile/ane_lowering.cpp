#include "compile/ane_lowering.h"

#include "compile/passes/clamp_boundaries.h"
#include "compile/passes/cse.h"
#include "compile/passes/dce.h"
#include "compile/passes/fold_constants.h"
#include "compile/passes/lower_layout.h"
#include "compile/passes/to_fp16.h"

namespace orion::compile {

AneLowered lower_for_ane(const ir::Graph& graph, const ParamValues& weights, const AneLoweringOptions& options) {
  AneLowered out{graph, {}, {}, {}};
  Pipeline p;
  p.add(bind_params_pass(weights)).add(fold_constants_pass()).add(legalize_pass(options.legalize));
  p.add(lower_layout_pass()).add(legalize_io_pass(out.io, options.io)).add(cse_pass({.merge_tensor_constants = !options.weights_vary})).add(dce_pass());
  p.add(clamp_boundaries_pass()).add(to_fp16_pass()).add(fold_constants_pass());
  PipelineOptions po;
  po.after_pass = options.after_pass;
  out.diagnostics = p.run(out.graph, po).diagnostics;
  out.warnings = validate_kernel_graph(out.graph, options.target, options.kernel_name);
  return out;
}

}  // namespace orion::compile
