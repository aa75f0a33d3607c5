#pragma once
// rematerialize: a value that widens constants (dequantize_affine of a quantized weight's words,
// scales and biases) is computed again for each node that reads it, right before that node,
// instead of once and kept. After autodiff the backward pass reads each forward weight again;
// kept, every layer's widened weight would live from its forward use to its backward one, the
// whole model at once; recomputed, one is held at a time, and the memory plan reuses its slot.
#include "ir/graph.h"

namespace orion::ir {

// Whether `graph` has a value rematerialize would copy (one read by more than one node).
bool has_shared_widened_constants(const ir::Graph& graph);
// The graph with one copy of each such value per reader; the graph as it was when there is none.
ir::Graph rematerialize(const ir::Graph& graph);

}  // namespace orion::ir
