#include "model/weight_dtype.h"

#include <string>

#include "core/error.h"

namespace orion::model {

std::string_view weight_dtype_name(WeightDType t) {
  switch (t) {
    case WeightDType::f32: return "f32";
    case WeightDType::f16: return "f16";
    case WeightDType::q8: return "q8";
    case WeightDType::q4: return "q4";
  }
  return "?";
}

WeightDType weight_dtype_from_name(std::string_view name) {
  for (WeightDType t : {WeightDType::f32, WeightDType::f16, WeightDType::q8, WeightDType::q4})
    if (weight_dtype_name(t) == name) return t;
  throw Error("unknown weight dtype '" + std::string(name) + "' (f32, f16, q8 or q4)");
}

}  // namespace orion::model
