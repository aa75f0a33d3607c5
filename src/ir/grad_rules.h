#pragma once
// The gradient rules the op table points at (OpInfo::grad), written with the Builder like any
// model: each adds the ops of one node's backward pass and returns one gradient per input (of
// that input's shape and dtype), or nullopt for an input that takes no gradient. Gradients of
// broadcast operands are summed back to the operand's shape.
#include <optional>
#include <span>
#include <vector>

#include "ir/builder.h"

namespace orion::ir {

// Sums `g` over the axes along which a value of `shape` was broadcast to g's shape, giving a
// value of `shape` (g itself when nothing was broadcast). Shapes are taken by value throughout:
// a reference into the builder's graph dangles once a node is added.
Value reduce_to_shape(Builder& b, Value g, Shape shape);

namespace grad {

using Grads = std::vector<std::optional<Value>>;

#define ORION_GRAD_RULE(name) \
  Grads name(Builder& b, const Node& node, std::span<const Value> in, Value out, Value g)
ORION_GRAD_RULE(matmul);
ORION_GRAD_RULE(binary);   // add sub mul div pow
ORION_GRAD_RULE(unary);    // neg exp log sqrt rsqrt tanh sigmoid relu gelu silu
ORION_GRAD_RULE(softmax);
ORION_GRAD_RULE(layer_norm);
ORION_GRAD_RULE(rms_norm);
ORION_GRAD_RULE(reduce);   // reduce_sum reduce_mean reduce_max
ORION_GRAD_RULE(reshape);
ORION_GRAD_RULE(transpose);
ORION_GRAD_RULE(slice);
ORION_GRAD_RULE(concat);
ORION_GRAD_RULE(gather);
ORION_GRAD_RULE(scatter_add);
ORION_GRAD_RULE(broadcast_to);
ORION_GRAD_RULE(cast);
ORION_GRAD_RULE(clamp);
ORION_GRAD_RULE(where);
ORION_GRAD_RULE(softmax_cross_entropy);
#undef ORION_GRAD_RULE

}  // namespace grad
}  // namespace orion::ir
