#include "device/ane_live_columns.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir/type_rules.h"

namespace orion::device {

namespace {

// The index of attribute `name` in the node's attrs (they follow op_info(op).attrs).
std::size_t attr_index(const ir::Node& n, std::string_view name) {
  const auto& specs = n.info().attrs;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  throw Error(ir::describe(n) + ": no attribute " + std::string(name));
}

constexpr int kShared = -1;  // a value without a token axis (see the header)
constexpr int kMixes = -2;   // an op that disqualifies the program

// A shared operand (a constant, a fixed-length input or what is computed from them alone)
// read by an op whose output has its tokens on axis `t` must broadcast along it: size 1 there
// (or no such axis, right-aligned against rank 4).
bool broadcasts_along(const ir::Node& operand, int t) {
  const Shape& s = operand.type.shape;
  const int a = static_cast<int>(s.size()) - 4 + t;
  return a < 0 || s[static_cast<std::size_t>(a)] == 1;
}

// The token axis of op n's output when n computes each token from that token's values alone
// (the inputs with a token axis all have it on `t`), else kMixes; the ops and the reasons are
// in the header.
int token_axis_of(const ir::Graph& g, const ir::Node& n, int t, const std::vector<int>& axis, std::int64_t width) {
  const auto shared = [&](ir::ValueId in) { return axis[static_cast<std::size_t>(in)] == kShared; };
  const bool elementwise = n.info().cls == ir::OpClass::binary || n.info().cls == ir::OpClass::unary ||
                           n.op == ir::Op::clamp || n.op == ir::Op::where || n.op == ir::Op::cast;
  if (elementwise) {
    for (ir::ValueId in : n.inputs)
      if (shared(in) && !broadcasts_along(g.node(in), t)) return kMixes;
    return t;
  }
  switch (n.op) {
    case ir::Op::reduce_sum:
    case ir::Op::reduce_mean:
    case ir::Op::reduce_max: {
      const std::vector<int> axes = ir::reduce_axes(n, 4);
      return std::find(axes.begin(), axes.end(), t) == axes.end() ? t : kMixes;
    }
    case ir::Op::softmax:
      return ir::normalize_axis(n.attr_int("axis"), 4) == t ? kMixes : t;
    case ir::Op::conv: {
      const ir::Node& w = g.node(n.inputs[1]);
      const auto& st = n.attr_ints("strides");
      const auto& pd = n.attr_ints("pads");
      return t == 3 && w.op == ir::Op::constant && w.type.rank() == 4 && w.type.shape[3] == 1 && st[1] == 1 &&
                     pd[2] == 0 && pd[3] == 0
                 ? 3
                 : kMixes;
    }
    case ir::Op::slice:
      return n.attr_ints("begin")[static_cast<std::size_t>(t)] == 0 &&
                     n.attr_ints("end")[static_cast<std::size_t>(t)] == width
                 ? t
                 : kMixes;
    case ir::Op::concat:
      for (ir::ValueId in : n.inputs)
        if (shared(in)) return kMixes;
      return ir::normalize_axis(n.attr_int("axis"), 4) == t ? kMixes : t;
    case ir::Op::reshape: {
      // Keeping the last axis keeps every element in its column: [1, C, 1, S] -> [1, H, D, S].
      const ir::Node& x = g.node(n.inputs[0]);
      return t == 3 && x.type.rank() == 4 && x.type.shape[3] == width && n.type.shape[3] == width ? 3 : kMixes;
    }
    case ir::Op::transpose:
      if (n.attr_ints("perm") != std::vector<std::int64_t>{0, 1, 3, 2}) return kMixes;
      return t == 3 ? 2 : 3;
    case ir::Op::matmul: {
      // One operand's rows (x) or columns (y) are the tokens, the other is shared: each token's
      // products read its own row or column and the shared matrix whole.
      const int ax = axis[static_cast<std::size_t>(n.inputs[0])], ay = axis[static_cast<std::size_t>(n.inputs[1])];
      const bool tx = n.attr_bool("transpose_x"), ty = n.attr_bool("transpose_y");
      if (ay == kShared && ax == (tx ? 3 : 2)) return 2;
      if (ax == kShared && ay == (ty ? 2 : 3)) return 3;
      return kMixes;
    }
    default:
      return kMixes;
  }
}

// The token axis of every value of g (kShared for constants and values without one), or an
// empty vector when g does not compute each token by itself (see the header).
std::vector<int> token_axes(const ir::Graph& g, std::int64_t width) {
  std::vector<int> axis(static_cast<std::size_t>(g.size()), kShared);
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.op == ir::Op::constant) continue;
    if (n.op == ir::Op::param || n.type.rank() != 4) return {};
    if (n.op == ir::Op::input) {
      // A token input has the outputs' width; any other is fixed-length (a KV cache), read whole.
      if (n.type.shape[3] == width) axis[static_cast<std::size_t>(id)] = 3;
      continue;
    }
    int t = kShared;
    for (ir::ValueId in : n.inputs) {
      const int a = axis[static_cast<std::size_t>(in)];
      if (a == kShared) continue;
      if (t != kShared && a != t) return {};
      t = a;
    }
    if (t == kShared) continue;  // computed from shared values alone: the same in every evaluation
    t = token_axis_of(g, n, t, axis, width);
    if (t == kMixes || n.type.shape[static_cast<std::size_t>(t)] != width) return {};
    axis[static_cast<std::size_t>(id)] = t;
  }
  return axis;
}

}  // namespace

std::int64_t column_independent_width(const ir::Graph& g) {
  if (g.nodes_of(ir::Op::input).empty() || g.outputs().empty()) return 0;
  const ir::Node& first = g.node(g.outputs().front());
  if (first.type.rank() != 4) return 0;
  const std::int64_t width = first.type.shape[3];
  const std::vector<int> axis = token_axes(g, width);
  if (axis.empty()) return 0;
  // Outputs carry their tokens as columns, as the runtime reads them.
  for (ir::ValueId id : g.outputs())
    if (axis[static_cast<std::size_t>(id)] != 3) return 0;
  return width;
}

ir::Graph narrow_columns(const ir::Graph& g, std::int64_t width, std::int64_t live) {
  if (live < 1 || live > width)
    throw Error("ane-sim: " + std::to_string(live) + " live columns of " + std::to_string(width));
  const std::vector<int> axis = token_axes(g, width);
  if (axis.empty()) throw Error("ane-sim: narrowing a program that does not compute its columns one by one");
  ir::Graph out = g;
  for (ir::ValueId id = 0; id < out.size(); ++id) {
    const int t = axis[static_cast<std::size_t>(id)];
    if (t == kShared) continue;
    ir::Node& n = out.node(id);
    n.type.shape[static_cast<std::size_t>(t)] = live;
    if (n.op == ir::Op::slice) {
      auto& end = std::get<std::vector<std::int64_t>>(n.attrs[attr_index(n, "end")]);
      end[static_cast<std::size_t>(t)] = live;
    } else if (n.op == ir::Op::reshape) {
      auto& shape = std::get<std::vector<std::int64_t>>(n.attrs[attr_index(n, "shape")]);
      shape.back() = live;
    }
  }
  return out;
}

}  // namespace orion::device
