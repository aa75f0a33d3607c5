#pragma once
// bind_params: turns `param` nodes into `const` nodes holding the given weights. The ANE bakes
// weights into a program when it compiles it (docs/ane/HARDWARE.md, "Weights"), so for the device a weight
// is a constant, and only as a constant can folding rewrite it (the transposes and reshapes
// that put a weight into conv's layout).
//
// A tensor of another float dtype than the param's is converted to it (the CPU executor
// accepts the same); shapes must match exactly. The constant shares the given tensor's storage
// when no conversion is needed (passes never write into a constant's data).
#include <map>
#include <memory>
#include <string>

#include "ir/transforms/pass.h"
#include "core/tensor_map.h"

namespace orion::ir {

struct BindParamsOptions {
  // A param with no value is an error, unless this is false (it then stays a param: a runtime
  // weight, which must reach the ANE through matmul, never conv).
  bool require_all = true;
};

// Returns the number of params bound. Names in `values` that are not params are ignored (one
// map of model weights serves several graphs).
int bind_params(ir::Graph& graph, const TensorMap& values, const BindParamsOptions& options = {});
// The pass keeps a reference to `values`: they must outlive it.
std::unique_ptr<Pass> bind_params_pass(const TensorMap& values, BindParamsOptions options = {});

}  // namespace orion::ir
