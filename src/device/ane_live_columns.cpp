#include "device/ane_live_columns.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir/type_rules.h"

namespace orion::device {

namespace {

// Axis 3 as an index into a rank-4 value's axes (a negative axis counts from the end).
bool is_column_axis(std::int64_t axis) { return axis == 3 || axis == -1; }

// A constant is the same for every column: a scalar, or a last axis of 1 (which broadcasts).
bool column_uniform_constant(const ir::Node& n) {
  const Shape& s = n.type.shape;
  return s.empty() || s.back() == 1;
}

// The index of attribute `name` in the node's attrs (they follow op_info(op).attrs).
std::size_t attr_index(const ir::Node& n, std::string_view name) {
  const auto& specs = n.info().attrs;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  throw Error(ir::describe(n) + ": no attribute " + std::string(name));
}

// Whether op n computes each column from the same column of its inputs, by itself (the list
// and the reasons are in the header).
bool column_local(const ir::Graph& g, const ir::Node& n, std::int64_t width) {
  switch (n.info().cls) {
    case ir::OpClass::binary:
    case ir::OpClass::unary:
      return true;
    default:
      break;
  }
  switch (n.op) {
    case ir::Op::clamp:
    case ir::Op::where:
    case ir::Op::cast:
      return true;
    case ir::Op::reduce_sum:
    case ir::Op::reduce_mean:
    case ir::Op::reduce_max: {
      const std::vector<int> axes = ir::reduce_axes(n, 4);
      return std::find(axes.begin(), axes.end(), 3) == axes.end();
    }
    case ir::Op::conv: {
      const ir::Node& w = g.node(n.inputs[1]);
      const auto& st = n.attr_ints("strides");
      const auto& pd = n.attr_ints("pads");
      return w.op == ir::Op::constant && w.type.rank() == 4 && w.type.shape[3] == 1 && st[1] == 1 && pd[2] == 0 &&
             pd[3] == 0;
    }
    case ir::Op::slice:
      return n.attr_ints("begin")[3] == 0 && n.attr_ints("end")[3] == width;
    case ir::Op::concat:
      return !is_column_axis(n.attr_int("axis"));
    default:
      return false;
  }
}

}  // namespace

std::int64_t column_independent_width(const ir::Graph& g) {
  const std::vector<ir::ValueId> inputs = g.nodes_of(ir::Op::input);
  if (inputs.empty() || g.outputs().empty()) return 0;
  const ir::Node& first = g.node(inputs.front());
  if (first.type.rank() != 4) return 0;
  const std::int64_t width = first.type.shape[3];
  for (const ir::Node& n : g.nodes()) {
    if (n.op == ir::Op::constant) {
      if (!column_uniform_constant(n)) return 0;
      continue;
    }
    // Every computed value carries the columns on axis 3: a value without them would be a
    // reduction over the columns (or a reshape of them).
    if (n.type.rank() != 4 || n.type.shape[3] != width) return 0;
    if (n.op == ir::Op::input) continue;
    if (n.op == ir::Op::param || !column_local(g, n, width)) return 0;
  }
  for (ir::ValueId id : g.outputs())
    if (g.node(id).op == ir::Op::constant) return 0;
  return width;
}

ir::Graph narrow_columns(const ir::Graph& g, std::int64_t width, std::int64_t live) {
  if (live < 1 || live > width)
    throw Error("ane-sim: " + std::to_string(live) + " live columns of " + std::to_string(width));
  ir::Graph out = g;
  for (ir::Node& n : out.nodes()) {
    if (n.op == ir::Op::constant) continue;
    n.type.shape[3] = live;
    if (n.op == ir::Op::slice) {
      auto& end = std::get<std::vector<std::int64_t>>(n.attrs[attr_index(n, "end")]);
      end[3] = live;
    }
  }
  return out;
}

}  // namespace orion::device
