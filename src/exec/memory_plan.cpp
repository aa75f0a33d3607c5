#include "exec/memory_plan.h"

namespace orion::exec {

std::vector<int> last_use_positions(const ir::Graph& graph, const std::vector<ir::ValueId>& order) {
  std::vector<int> last(static_cast<std::size_t>(graph.size()), -1);
  for (std::size_t step = 0; step < order.size(); ++step)
    for (ir::ValueId in : graph.node(order[step]).inputs)
      last[static_cast<std::size_t>(in)] = static_cast<int>(step);
  return last;
}

}  // namespace orion::exec
