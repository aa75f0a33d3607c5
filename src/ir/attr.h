#pragma once
// Attribute values of IR nodes. Which attributes an op has, their kinds and defaults are
// declared in the op table (op_table.cpp); a node stores one value per declared attribute,
// in declaration order, so every node is complete and prints the same way every time.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace orion::ir {

enum class AttrKind : std::uint8_t { integer, real, boolean, string, ints, dtype, tensor };

using AttrValue =
    std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>, DType, Tensor>;

// The kind an AttrValue holds (the variant's alternatives are in AttrKind's order).
inline AttrKind attr_kind_of(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }

constexpr std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::integer: return "integer";
    case AttrKind::real: return "real";
    case AttrKind::boolean: return "boolean";
    case AttrKind::string: return "string";
    case AttrKind::ints: return "integer list";
    case AttrKind::dtype: return "dtype";
    case AttrKind::tensor: return "tensor";
  }
  return "?";
}

// One attribute an op declares. `required` attributes have no default; the others default to
// `default_number` (integer, real, boolean), `default_text` (string, dtype) or empty (ints).
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required = false;
  double default_number = 0;
  std::string_view default_text = {};
};

// The default value of an optional attribute.
AttrValue attr_default(const AttrSpec& spec);

// Same dtype, shape and element bytes (so NaNs and signed zeros must match exactly).
bool same_tensor(const Tensor& a, const Tensor& b);
// Equal as stored: a real compares by its bits, so -0.0 differs from 0.0 and NaN equals NaN;
// tensors by same_tensor. What common-subexpression elimination and the IR round trip mean by
// "the same attribute".
bool same_attr(const AttrValue& a, const AttrValue& b);

}  // namespace orion::ir
