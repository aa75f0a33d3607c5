#pragma once
// legalize: rewrites the ops the ANE does not accept into ones it does (docs/ane/HARDWARE.md),
// on the IR's own layout, so that the graph still runs on the CPU executor and can be checked
// against the original:
//   gelu -> its tanh form written out      silu -> mul(x, sigmoid(x))
//   layer_norm, rms_norm -> written out over the last axis (the IR's norm axis)
//   neg -> mul(x, -1)                      rsqrt -> pow(x, -0.5)
// (expansions.h gives each form and why). The replacement of a node keeps its name.
//
// Left for other passes and the constraint catalogue: sqrt stays (MIL has it and no report
// says the ANE rejects it); concat stays (whether it may reach the device is a rule of the
// catalogue with its opt-in, and fold_constants removes the constant ones); attention is
// already written out by the model builders (the IR has no fused attention op); conv's bias
// and scalar arguments of MIL ops belong to the layout lowering and the MIL writer. Scalar
// arguments this pass introduces are rank-0 constants.
#include <memory>

#include "compile/passes/expansions.h"
#include "ir/transforms/pass.h"

namespace orion::compile {

struct LegalizeOptions {
  GeluForm gelu_form = GeluForm::tanh;
};

// Returns the number of nodes rewritten.
int legalize(ir::Graph& graph, const LegalizeOptions& options = {});
std::unique_ptr<ir::Pass> legalize_pass(LegalizeOptions options = {});

}  // namespace orion::compile
