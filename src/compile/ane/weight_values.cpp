#include "compile/ane/weight_values.h"

namespace orion::compile {

std::vector<bool> weight_values(const ir::Graph& g) {
  std::vector<bool> w(static_cast<std::size_t>(g.size()), false);
  for (ir::ValueId id : g.topological_order()) {
    const ir::Node& n = g.node(id);
    if (n.op == ir::Op::param || n.op == ir::Op::constant) {
      w[static_cast<std::size_t>(id)] = true;
    } else if (n.op != ir::Op::input && !n.inputs.empty()) {
      bool all = true;
      for (ir::ValueId in : n.inputs) all = all && w[static_cast<std::size_t>(in)];
      w[static_cast<std::size_t>(id)] = all;
    }
  }
  return w;
}

std::int64_t device_bytes(const ir::TensorType& t) {
  const std::int64_t per = is_float(t.dtype) ? 2 : static_cast<std::int64_t>(dtype_size(t.dtype));
  return shape_numel(t.shape) * per;
}

}  // namespace orion::compile
