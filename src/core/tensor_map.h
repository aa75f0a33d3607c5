#pragma once
// Tensors by name: a graph's inputs and params as the executors bind them, a package's values
// between its steps, the weights a pass binds. One name for the one map every layer passes.
#include <functional>
#include <map>
#include <string>

#include "core/tensor.h"

namespace orion {

using TensorMap = std::map<std::string, Tensor, std::less<>>;

}  // namespace orion
