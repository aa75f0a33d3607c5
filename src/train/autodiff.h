#pragma once
// Reverse-mode differentiation of IR graphs. The backward pass is an ordinary IR graph (so it
// runs on every executor and compiles like any other), written node by node by the gradient
// rules of the op table (ir/grad_rules.h), from the loss back to the requested values.
#include <span>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace orion::train {

struct GradientOptions {
  // If not empty: an f32 scalar input of this name multiplies the seed gradient (dynamic loss
  // scaling); otherwise the seed is 1.
  std::string seed_input = {};
  // If not empty: the gradient of each forward value whose name starts with this is named
  // "grad.at." + its name (where a model's layers end in the backward pass too, so that a
  // device can cut kernels there: PartitionOptions::cut_after).
  std::string name_gradients_of = {};
};

// `forward`: a verified graph with an output named `loss` that is an f32 scalar (rank 0 or shape
// {1}). Returns a verified graph with the same inputs and params (plus the seed input if asked)
// whose outputs are the forward graph's outputs in order, followed by one gradient per name in
// `wrt` (params or float inputs of `forward`), named "grad." + name, f32, of the param's shape.
// Gradients of values with several uses are summed; only what the requested gradients need is
// built. A name in `wrt` that is not a param/input, or an op without a rule on the path, is an
// orion::Error naming it.
ir::Graph gradient_graph(const ir::Graph& forward, std::string_view loss,
                         std::span<const std::string> wrt, const GradientOptions& options = {});

}  // namespace orion::train
