#pragma once
// Which values of a graph are weights: params, constants, and everything computed from them
// alone (a transpose or slice of a weight). The ANE bakes these into a program at compile time,
// so the partitioner counts their bytes against a kernel's on-chip budget and copies them into
// every kernel (or host segment) that reads them, and chunk_matmuls splits the large ones.
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace orion::compile {

// weight[i] is true when value i is a param, a constant or computed from those alone.
std::vector<bool> weight_values(const ir::Graph& graph);

// The bytes a value takes on the device: fp16 for every float type (to_fp16 converts them),
// the dtype's own size otherwise.
std::int64_t device_bytes(const ir::TensorType& type);

}  // namespace orion::compile
