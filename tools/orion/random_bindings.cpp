#include "random_bindings.h"

#include <cmath>

#include "core/random.h"

namespace orion::cli {

TensorMap random_bindings(const ir::Graph& graph, std::uint64_t seed) {
  Rng rng(seed);
  TensorMap out;
  for (const ir::Node& n : graph.nodes()) {
    if (n.op != ir::Op::input && n.op != ir::Op::param) continue;
    const DType dt = n.type.dtype;
    Tensor t(is_float(dt) ? DType::f32 : dt, n.type.shape);
    if (is_float(dt)) {
      float stddev = 1.0f;
      if (n.op == ir::Op::param)
        stddev = n.type.rank() >= 2
                     ? 1.0f / std::sqrt(static_cast<float>(std::max<std::int64_t>(1, n.type.shape[n.type.shape.size() - 2])))
                     : 0.1f;
      rng.fill_normal(t.span<float>(), 0.0f, stddev);
    } else if (dt == DType::boolean) {
      for (auto& b : t.span<std::uint8_t>()) b = static_cast<std::uint8_t>(rng.below(2));
    }
    out.emplace(n.name, std::move(t));
  }
  return out;
}

}  // namespace orion::cli
