#pragma once
// Common-subexpression elimination: two nodes of the same op, with the same inputs, attributes
// and type, compute the same value, so later ones are replaced by the first. Constants with the
// same dtype, shape and bytes are merged the same way (the scalar constants legalize writes
// for every gelu and norm collapse to one each). Deterministic: the earliest node survives,
// with its name.
//
// Not merged:
// - inputs and params: different names are different bindings, whatever their types;
// - a node that is a graph output, into an earlier node: the ANE binds outputs by their
//   variable names, so an output keeps its own node and name (it may still absorb later
//   duplicates).
// Values compare by their bits: 0.0 and -0.0 differ, equal NaNs are equal.
#include <memory>

#include "ir/transforms/pass.h"

namespace orion::ir {

struct CseOptions {
  // false: only one-element constants merge by value. For kernels whose weights will be
  // replaced by others of the same shapes (training): two weights equal at the start (zero
  // biases, unit gains) differ after a step, and a program whose structure followed their
  // values could not take the new ones by a reload.
  bool merge_tensor_constants = true;
};

// Returns whether any node was merged. Merged nodes are dropped, the rest keep their order.
bool cse(ir::Graph& graph, const CseOptions& options = {});
std::unique_ptr<Pass> cse_pass(CseOptions options = {});

}  // namespace orion::ir
