#pragma once
// clamp_boundaries: clamp(-65504, 65504) where a value crosses between host and device, so that
// an inf made on one side does not turn into NaN on the other (docs/ane/HARDWARE.md, "Numerics").
//
// The rule:
// - Every float graph input is clamped where it enters: its readers read the clamp. The host
//   packs inputs into fp16 surfaces, and an f32 value beyond 65504 arrives as inf; the clamp
//   turns it back into +-65504 before any op sees it. Runtime weights (lower_layout.h) are not:
//   the host clamps them as it writes them (device::pack_weight, ANE032).
// - Every float graph output is clamped before it leaves, unless its op cannot leave the range:
//   sigmoid, tanh and softmax (within [-1, 1]) and a clamp already within +-65504. An output
//   that is a source is not clamped either: an input is the host's own value, constants are
//   saturated by to_fp16. The clamp takes the output's name (the ANE binds outputs by name);
//   the op it clamps is renamed "<name>.unclamped", and the graph's other readers keep reading
//   that, so only what leaves the device changes.
// Running the pass twice changes nothing the second time: a clamped input's readers are all
// clamps within range, a clamped output is a clamp. When the partitioner cuts a graph into
// kernels, every cut is such a crossing, and this pass runs on each kernel's graph.
#include <memory>

#include "compile/passes/lower_layout.h"
#include "ir/transforms/pass.h"

namespace orion::compile {

struct ClampCounts {
  int inputs = 0;
  int outputs = 0;
};

// `weights`, when given: the runtime weights' inputs, left unclamped.
ClampCounts clamp_boundaries(ir::Graph& graph, const WeightInputs* weights = nullptr);
// The pass reads `weights` when it runs: it must outlive the pass.
std::unique_ptr<ir::Pass> clamp_boundaries_pass(const WeightInputs* weights = nullptr);

}  // namespace orion::compile
