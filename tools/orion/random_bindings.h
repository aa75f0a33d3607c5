#pragma once
// Seeded random values for every input and param of a graph, for running graphs that come
// without data (`orion run`). Float inputs are normal(0, 1); float params of rank >= 2 are
// normal(0, 1/sqrt(fan_in)) with fan_in the second-to-last dimension, rank-0/1 float params
// normal(0, 0.1); i32 values are zeros (always a valid index); bools are random.
#include <cstdint>

#include "exec/cpu/executor.h"

namespace orion::cli {

TensorMap random_bindings(const ir::Graph& graph, std::uint64_t seed);

}  // namespace orion::cli
