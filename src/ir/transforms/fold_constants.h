#pragma once
// Constant folding: a node whose inputs are all constants is evaluated at compile time
// (const_eval.h) and replaced by a constant with its name and value. One walk in node order
// folds whole chains (transpose -> reshape -> cast of a weight), because a folded node is a
// constant by the time its readers are visited.
//
// What is folded: data movement (reshape, transpose, slice, concat), cast, clamp and the
// elementwise ops. What is not: ops const_eval does not know (matmul, reductions, norms,
// softmax, gather, where), which stay for the device; and an elementwise op whose broadcast
// result has more elements than its largest input, since folding it would grow the weights the
// program carries (mul of a [4096, 1] and a [1, 4096] constant is cheap to compute on the
// device and 32 MB to store). Folding never grows the constant data beyond that rule; the
// inputs it leaves unread are removed by dce.
#include <memory>

#include "ir/transforms/pass.h"

namespace orion::ir {

// Returns the number of nodes folded.
int fold_constants(ir::Graph& graph);
std::unique_ptr<Pass> fold_constants_pass();

}  // namespace orion::ir
