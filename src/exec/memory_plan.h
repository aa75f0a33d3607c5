#pragma once
// Memory planning: which values can share a buffer. A value's buffer is free again once its
// last reader has run, so intermediate values of a long graph reuse a few slots instead of
// each holding its own memory.
#include <cstddef>
#include <vector>

#include "ir/graph.h"

namespace orion::exec {

struct MemoryPlan {
  // Per value: its slot, or -1 for values that are not planned (sources, which are bound by
  // the caller, and graph outputs, which are handed to the caller and must not be reused).
  std::vector<int> slot_of;
  std::vector<std::size_t> slot_bytes;  // size of each slot
  std::size_t planned_bytes = 0;        // sum of slot sizes
  std::size_t unplanned_bytes = 0;      // what the same values would take without reuse
};

// A free slot takes a value at most kMaxSlotSlack times smaller, or wasting at most
// kSmallSlotWaste bytes.
inline constexpr std::size_t kMaxSlotSlack = 4, kSmallSlotWaste = std::size_t{64} << 10;

// `order` is a topological order of the graph; `bytes_of(node)` the bytes a value needs.
template <class BytesOf>
MemoryPlan plan_memory(const ir::Graph& graph, const std::vector<ir::ValueId>& order,
                       BytesOf bytes_of);

std::vector<int> last_use_positions(const ir::Graph& graph, const std::vector<ir::ValueId>& order);

template <class BytesOf>
MemoryPlan plan_memory(const ir::Graph& graph, const std::vector<ir::ValueId>& order,
                       BytesOf bytes_of) {
  MemoryPlan plan;
  plan.slot_of.assign(static_cast<std::size_t>(graph.size()), -1);
  std::vector<bool> is_output(static_cast<std::size_t>(graph.size()), false);
  for (ir::ValueId out : graph.outputs()) is_output[static_cast<std::size_t>(out)] = true;
  const std::vector<int> last_use = last_use_positions(graph, order);
  std::vector<int> free_slots;
  // Values whose slot becomes free after the step at which they are last read.
  std::vector<std::vector<ir::ValueId>> release_at(order.size());
  for (std::size_t step = 0; step < order.size(); ++step) {
    const ir::ValueId id = order[step];
    const ir::Node& n = graph.node(id);
    const auto u = static_cast<std::size_t>(id);
    if (n.info().cls != ir::OpClass::source && !is_output[u]) {
      const std::size_t need = bytes_of(n);
      plan.unplanned_bytes += need;
      // Best fit: the smallest free slot that holds the value without wasting most of it, else
      // grow the largest free one that is too small, else open a new slot. A small value in a
      // far larger slot would pin it for its whole life (an activation kept for the backward
      // pass in the slot of a weight widened for one product), and the next large value would
      // need a slot of its own.
      int best = -1;
      for (int s : free_slots) {
        const std::size_t have = plan.slot_bytes[static_cast<std::size_t>(s)];
        const bool fits = have >= need && (have / kMaxSlotSlack <= need || have - need <= kSmallSlotWaste);
        if (fits && (best < 0 || have < plan.slot_bytes[static_cast<std::size_t>(best)])) best = s;
      }
      if (best < 0) {
        for (int s : free_slots) {
          const std::size_t have = plan.slot_bytes[static_cast<std::size_t>(s)];
          if (have < need && (best < 0 || have > plan.slot_bytes[static_cast<std::size_t>(best)])) best = s;
        }
        if (best >= 0) plan.slot_bytes[static_cast<std::size_t>(best)] = need;
      }
      if (best < 0) {
        best = static_cast<int>(plan.slot_bytes.size());
        plan.slot_bytes.push_back(need);
      } else {
        std::erase(free_slots, best);
      }
      plan.slot_of[u] = best;
      const int last = last_use[u];
      // A value nobody reads is free right after it is written.
      release_at[static_cast<std::size_t>(last < 0 ? static_cast<int>(step) : last)].push_back(id);
    }
    for (ir::ValueId done : release_at[step]) free_slots.push_back(plan.slot_of[static_cast<std::size_t>(done)]);
  }
  for (std::size_t b : plan.slot_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace orion::exec
