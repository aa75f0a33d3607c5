// Memory planning: slot reuse along chains, no sharing between values alive at the same time
// (checked by brute force over random graphs), and the byte accounting.
#include <map>

#include "exec/memory_plan.h"
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using exec::MemoryPlan;
using ir::Builder;
using ir::Value;

std::size_t f32_bytes(const ir::Node& n) { return static_cast<std::size_t>(n.type.numel()) * 4; }

ir::Graph chain(int length) {
  Builder b;
  Value v = b.input("x", DType::f32, {8, 16});
  for (int i = 0; i < length; ++i) v = i % 2 ? b.tanh(v) : b.relu(v);
  b.output(v);
  return b.finish();
}

TEST(MemoryPlan, ChainNeedsTwoSlots) {
  for (int n : {2, 3, 10, 50}) {
    const ir::Graph g = chain(n);
    const MemoryPlan plan = exec::plan_memory(g, g.topological_order(), f32_bytes);
    EXPECT_EQ(plan.slot_bytes.size(), n == 2 ? 1u : 2u) << n;
    int planned = 0;
    for (int s : plan.slot_of) planned += s >= 0;
    EXPECT_EQ(planned, n - 1) << "every op but the output is planned";
    EXPECT_EQ(plan.unplanned_bytes, static_cast<std::size_t>(n - 1) * 8 * 16 * 4);
    EXPECT_EQ(plan.planned_bytes, plan.slot_bytes.size() * 8 * 16 * 4);
    EXPECT_LE(plan.planned_bytes, plan.unplanned_bytes);
  }
  // The executor plans the same way.
  exec::CpuExecutor ex(chain(20));
  EXPECT_EQ(ex.memory_plan().slot_bytes.size(), 2u);
}

// The executor sizes slots in compute storage: f16 and bf16 values take 4 bytes per element.
TEST(MemoryPlan, ExecutorSizesSlotsForComputeStorage) {
  Builder b;
  Value v = b.input("x", DType::f16, {3, 5});
  v = b.tanh(b.relu(v));
  b.output(b.exp(v));
  const Value idx = b.input("i", DType::i32, {7});
  b.output(b.cast(b.cast(idx, DType::u8), DType::f32));
  exec::CpuExecutor ex(b.finish());
  const MemoryPlan& plan = ex.memory_plan();
  const ir::Graph& g = ex.graph();
  for (std::size_t id = 0; id < plan.slot_of.size(); ++id) {
    const int s = plan.slot_of[id];
    if (s < 0) continue;
    const ir::Node& n = g.node(static_cast<ir::ValueId>(id));
    const std::size_t need = static_cast<std::size_t>(n.type.numel()) * (is_float(n.type.dtype) ? 4 : dtype_size(n.type.dtype));
    EXPECT_GE(plan.slot_bytes[static_cast<std::size_t>(s)], need) << ir::describe(n);
  }
  // And the graph runs.
  const auto out = ex.run({{"x", Tensor::from_floats({3, 5}, std::vector<float>(15, 0.5f))},
                           {"i", Tensor::from_ints({7}, std::vector<std::int32_t>{1, 2, 3, 300, -4, 0, 255})}});
  EXPECT_NEAR(out[0].to_floats()[0], std::exp(std::tanh(0.5)), 2e-3);
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{1, 2, 3, 255, 0, 0, 255}));
}

// A random graph: ops of one or two inputs over values of a few shapes, some never read, some
// outputs in the middle.
ir::Graph random_graph(Rng& rng) {
  const Shape shapes[] = {{4, 9}, {9}, {4, 1}, {2, 4, 9}, {1}};
  Builder b;
  std::vector<Value> vals;
  const int n_in = 1 + static_cast<int>(rng.below(3));
  for (int i = 0; i < n_in; ++i) vals.push_back(b.input(cat("in", i), DType::f32, shapes[rng.below(5)]));
  const int n_ops = 5 + static_cast<int>(rng.below(40));
  for (int i = 0; i < n_ops; ++i) {
    const std::size_t n = vals.size();
    auto pick = [&] { return vals[rng.uniform() < 0.6f ? n - 1 - rng.below(std::min<std::size_t>(n, 4)) : rng.below(n)]; };
    switch (rng.below(4)) {
      case 0: vals.push_back(b.add(pick(), pick())); break;
      case 1: vals.push_back(b.mul(pick(), pick())); break;
      case 2: vals.push_back(b.exp(pick())); break;
      default: {
        const Value v = pick();
        vals.push_back(b.shape(v).empty() ? b.exp(v) : b.reduce_sum(v, {0}, rng.uniform() < 0.5f));
        break;
      }
    }
  }
  b.output(vals.back());
  for (int i = 0; i < 2; ++i) b.output(vals[rng.below(vals.size())]);
  return b.finish();
}

TEST(MemoryPlan, LiveValuesNeverShareASlot) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng(seed);
    const ir::Graph g = random_graph(rng);
    const std::vector<ir::ValueId> order = g.topological_order();
    // Sizes unrelated to the shapes too, so that slots must grow and be chosen by size.
    std::map<const ir::Node*, std::size_t> sizes;
    for (const ir::Node& n : g.nodes()) sizes[&n] = 1 + rng.below(1000);
    auto bytes = [&](const ir::Node& n) { return seed % 2 ? sizes.at(&n) : f32_bytes(n); };
    const MemoryPlan plan = exec::plan_memory(g, order, bytes);

    // Lifetimes: from the step that writes a value to the last step that reads it.
    const std::size_t nv = static_cast<std::size_t>(g.size());
    std::vector<std::size_t> def(nv), last(nv);
    for (std::size_t step = 0; step < order.size(); ++step) {
      const auto id = static_cast<std::size_t>(order[step]);
      def[id] = last[id] = step;
    }
    for (std::size_t step = 0; step < order.size(); ++step)
      for (ir::ValueId in : g.node(order[step]).inputs) last[static_cast<std::size_t>(in)] = std::max(last[static_cast<std::size_t>(in)], step);
    std::vector<bool> is_output(nv, false);
    for (ir::ValueId o : g.outputs()) is_output[static_cast<std::size_t>(o)] = true;

    ASSERT_EQ(plan.slot_of.size(), nv);
    std::size_t unplanned = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      const ir::Node& n = g.node(static_cast<ir::ValueId>(v));
      const bool should_plan = n.info().cls != ir::OpClass::source && !is_output[v];
      ASSERT_EQ(plan.slot_of[v] >= 0, should_plan) << "seed " << seed << " " << ir::describe(n);
      if (!should_plan) continue;
      unplanned += bytes(n);
      ASSERT_LT(static_cast<std::size_t>(plan.slot_of[v]), plan.slot_bytes.size());
      ASSERT_GE(plan.slot_bytes[static_cast<std::size_t>(plan.slot_of[v])], bytes(n)) << "seed " << seed;
      for (std::size_t u = 0; u < v; ++u) {
        if (plan.slot_of[u] != plan.slot_of[v]) continue;
        // Sharing is fine only when one value is dead before the other is written (a value
        // may not share with the inputs of the op that writes it).
        const bool disjoint = def[v] > last[u] || def[u] > last[v];
        ASSERT_TRUE(disjoint) << "seed " << seed << ": " << ir::describe(g.node(static_cast<ir::ValueId>(u))) << " and "
                              << ir::describe(n) << " share slot " << plan.slot_of[v] << " while both are live";
      }
    }
    EXPECT_EQ(plan.unplanned_bytes, unplanned) << "seed " << seed;
    std::size_t sum = 0;
    for (std::size_t s : plan.slot_bytes) sum += s;
    EXPECT_EQ(plan.planned_bytes, sum) << "seed " << seed;
    EXPECT_LE(plan.planned_bytes, plan.unplanned_bytes) << "seed " << seed;
  }
}

}  // namespace
}  // namespace orion::test
