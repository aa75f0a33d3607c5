#pragma once
// A test-only fp64 interpreter of the IR: naive loops in double, written from the op table's
// docs and independent of the CPU executor's kernels, so that it can judge them and the
// gradient rules. Integer and bool values are held as doubles too (exact below 2^53). Casts
// to a float dtype keep the double value (this is the exact-arithmetic reference, not a model
// of fp16 storage).
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace orion::train::testing {

struct F64Tensor {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<double> v;

  std::int64_t numel() const { return static_cast<std::int64_t>(v.size()); }
};

using F64Bindings = std::map<std::string, F64Tensor, std::less<>>;

F64Tensor to_f64(const Tensor& t);
Tensor to_tensor(const F64Tensor& t);  // in t.dtype (floats rounded to it)

// Runs `graph` with every input and param bound by name; returns its outputs in order.
std::vector<F64Tensor> run_f64(const ir::Graph& graph, const F64Bindings& bindings);

}  // namespace orion::train::testing
