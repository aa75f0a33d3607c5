#pragma once
// A small reference evaluator for the ops constant folding needs, on constant tensors. The
// compiler may not use the CPU executor (compile sits beside exec, not above it), and folding
// needs only data movement and elementwise arithmetic, which fit in one short file.
//
// Semantics follow the op table's definitions (and the executor's rules where the table leaves
// a choice: float arithmetic in fp32, the result rounded to the node's dtype; cast saturates
// like Tensor::to). Tests hold the two together.
#include <optional>
#include <span>

#include "core/tensor.h"
#include "ir/graph.h"

namespace orion::ir {

// Whether evaluate() handles `op`.
bool can_evaluate(ir::Op op);

// The value of `node` given its inputs' values (contiguous or not), with the node's type;
// nullopt when the op is not one can_evaluate() accepts.
std::optional<Tensor> evaluate(const ir::Node& node, std::span<const Tensor> inputs);

}  // namespace orion::ir
