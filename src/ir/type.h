#pragma once
// The type of an IR value: an element type and a static shape.
#include <string>

#include "core/dtype.h"
#include "core/tensor.h"

namespace orion::ir {

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t numel() const { return shape_numel(shape); }
  bool operator==(const TensorType&) const = default;
  // "f32[16, 64]", the spelling of the IR text form.
  std::string str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }
};

}  // namespace orion::ir
