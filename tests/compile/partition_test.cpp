// partition_graph: GPT-2's prefill and decode graphs cut into kernels and host segments. The
// segments run one after another on the CPU executor must give the original graph's outputs
// bit for bit (they are the same nodes), every kernel must lower for the ANE, and the cuts
// must follow the rules: host ops where the ANE cannot run them, the weight budget per kernel,
// token-major values at every kernel boundary.
#include <gtest/gtest.h>

#include <map>

#include "model/gpt2_test_config.h"
#include "compile/ane/ane_lowering.h"
#include "compile/ane/partition.h"
#include "compile/passes/chunk_matmuls.h"
#include "core/error.h"
#include "core/random.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2.h"
#include "model/gpt2/gpt2_block.h"

namespace orion::compile {
namespace {

model::Gpt2Config tiny() { return model::testing::small_gpt2_config({.dim = 32, .vocab = 100, .positions = 64}); }

TensorMap weights_for(const ir::Graph& g) {
  Rng rng(5);
  auto w = model::gpt2_init_params(g, 2, rng);
  return {w.begin(), w.end()};
}

TensorMap inputs_for(const ir::Graph& g, std::uint64_t seed) {
  Rng rng(seed);
  TensorMap b;
  for (ir::ValueId id : g.nodes_of(ir::Op::input)) {
    const ir::Node& n = g.node(id);
    Tensor t(n.type.dtype, n.type.shape);
    if (n.type.dtype == DType::i32) {
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.data<std::int32_t>()[i] = n.name == "positions" ? static_cast<std::int32_t>(10 + i) : static_cast<std::int32_t>(rng.next_u64() % 100);
    } else if (n.name == "mask") {
      for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = i % 3 == 1 ? -1e9f : 0.0f;
    } else {
      rng.fill_uniform(t.span<float>(), -1, 1);
    }
    b.emplace(n.name, std::move(t));
  }
  return b;
}

// Runs the segments in order on the CPU, as a runtime would, over one table of values.
std::map<std::string, Tensor> run_segments(const Partition& p, const TensorMap& inputs, const TensorMap& w) {
  std::map<std::string, Tensor> table;
  for (const auto& [name, t] : inputs) table[p.renamed.at(name)] = t;
  for (const Segment& s : p.segments) {
    TensorMap b(w.begin(), w.end());
    for (ir::ValueId id : s.graph.nodes_of(ir::Op::input)) b[s.graph.node(id).name] = table.at(s.graph.node(id).name);
    const std::vector<Tensor> out = exec::CpuExecutor(s.graph, {exec::Numerics::f32, 2}).run(b);
    for (std::size_t i = 0; i < out.size(); ++i) table[s.graph.node(s.graph.outputs()[i]).name] = out[i];
  }
  return table;
}

void expect_same_as_unpartitioned(const ir::Graph& g, const Partition& p, const TensorMap& w) {
  const TensorMap in = inputs_for(g, 9);
  TensorMap all(w.begin(), w.end());
  for (const auto& [n, t] : in) all[n] = t;
  const std::vector<Tensor> want = exec::CpuExecutor(g, {exec::Numerics::f32, 2}).run(all);
  const auto table = run_segments(p, in, w);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string& name = g.node(g.outputs()[i]).name;
    const auto got = table.at(p.renamed.at(name)).to_floats(), ref = want[i].to_floats();
    ASSERT_EQ(got.size(), ref.size()) << name;
    for (std::size_t k = 0; k < ref.size(); ++k) ASSERT_EQ(got[k], ref[k]) << name << " element " << k;
  }
}

PartitionOptions options(std::int64_t seq, std::int64_t on_chip_bytes = AneTarget{}.on_chip_bytes) {
  PartitionOptions o;
  o.seq = seq;
  o.target.on_chip_bytes = on_chip_bytes;
  return o;
}

std::string placements(const Partition& p) {
  std::string s;
  for (const Segment& seg : p.segments) s += (s.empty() ? "" : " ") + seg.name;
  return s;
}

TEST(Partition, PrefillIsTheEmbeddingOnTheHostThenOneKernel) {
  const model::Gpt2Config c = tiny();
  const ir::Graph g = model::gpt2_graph(c, {.seq = 16});
  const TensorMap w = weights_for(g);
  const Partition p = partition_graph(g, options(16));
  EXPECT_EQ(placements(p), "host0 ane0");
  EXPECT_EQ(p.segments[0].graph.nodes_of(ir::Op::gather).size(), 2u);
  EXPECT_EQ(p.segments[1].graph.outputs().size(), 5u);  // logits, k and v of two layers
  EXPECT_EQ(p.renamed.at("k.0"), "k_0");
  EXPECT_EQ(p.renamed.at("logits"), "logits");
  expect_same_as_unpartitioned(g, p, w);
  EXPECT_NO_THROW(lower_for_ane(p.segments[1].graph, w));
}

TEST(Partition, DecodeRunsAttentionOverTheCacheOnTheHost) {
  const model::Gpt2Config c = tiny();
  const ir::Graph g = model::gpt2_graph(c, {.seq = 1, .past = 40});
  const TensorMap w = weights_for(g);
  PartitionOptions o = options(1);
  o.host_nodes = shape_varying_nodes(g, model::gpt2_graph(c, {.seq = 1, .past = 39}));
  const Partition p = partition_graph(g, o);
  // Embedding, then per layer the per-token work on the ANE and attention on the host; the
  // last kernel carries the last layer's MLP, the final norm and the head.
  EXPECT_EQ(placements(p), "host0 ane0 host1 ane1 host2 ane2");
  for (const Segment& s : p.segments) {
    if (s.placement != Placement::ane) continue;
    for (ir::ValueId id : s.graph.nodes_of(ir::Op::input)) EXPECT_EQ(s.graph.node(id).type.rank(), 2) << s.name;
    for (ir::ValueId id : s.graph.outputs()) EXPECT_EQ(s.graph.node(id).type.shape[0], 1) << s.name;
    EXPECT_TRUE(s.graph.nodes_of(ir::Op::softmax).empty()) << s.name << " attends over the cache";
    EXPECT_NO_THROW(lower_for_ane(s.graph, w)) << s.name;
  }
  EXPECT_EQ(p.segments[2].graph.nodes_of(ir::Op::concat).size(), 2u);  // the KV append of layer 0
  expect_same_as_unpartitioned(g, p, w);
}

TEST(Partition, AWeightBudgetCutsKernelsWhereOnlyTokenMajorValuesCross) {
  const model::Gpt2Config c = tiny();
  ir::Graph g = model::gpt2_graph(c, {.seq = 16});
  const TensorMap w = weights_for(g);
  const std::int64_t budget = 5000;  // fp16 bytes: about a third of a block
  chunk_matmuls(g, budget);          // the head (100 x 32, 6400 bytes) in two pieces
  const Partition p = partition_graph(g, options(16, budget));
  int kernels = 0;
  for (const Segment& s : p.segments) {
    if (s.placement == Placement::host) continue;
    ++kernels;
    EXPECT_LE(s.weight_bytes, budget) << s.name;
    for (ir::ValueId id : s.graph.nodes_of(ir::Op::input)) EXPECT_EQ(s.graph.node(id).type.shape, (Shape{16, s.graph.node(id).type.shape[1]}));
    AneLoweringOptions lo;
    lo.target.on_chip_bytes = budget;
    EXPECT_NO_THROW(lower_for_ane(s.graph, w, lo)) << s.name;
  }
  EXPECT_GE(kernels, 6);
  EXPECT_EQ(p.segments.back().placement, Placement::host);  // the join of the head's pieces
  expect_same_as_unpartitioned(g, p, w);
}

TEST(Partition, Errors) {
  const model::Gpt2Config c = tiny();
  const ir::Graph g = model::gpt2_graph(c, {.seq = 16});
  try {
    partition_graph(g, options(16, 5000));  // the head not chunked
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk_matmuls"), std::string::npos) << e.what();
  }
  EXPECT_THROW(partition_graph(g, options(0)), Error);
  EXPECT_THROW(shape_varying_nodes(g, model::gpt2_graph(c, {.seq = 1, .past = 3})), Error);
  const auto varying = shape_varying_nodes(model::gpt2_graph(c, {.seq = 1, .past = 4}), model::gpt2_graph(c, {.seq = 1, .past = 5}));
  EXPECT_FALSE(varying.empty());
  for (const std::string& n : varying) EXPECT_EQ(n.find("c_fc"), std::string::npos) << n << " does not depend on the cache";
}

}  // namespace
}  // namespace orion::compile
