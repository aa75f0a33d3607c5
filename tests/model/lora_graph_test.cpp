// LoRA's pieces: the targets a --lora-targets list names for each architecture, the low-rank
// path the graph transform adds (its params' shapes, in both weight layouts), and a new
// adapter (B zero) leaving the model's function exactly as it was.
#include <gtest/gtest.h>

#include "core/error.h"
#include "exec/cpu/executor.h"
#include "gpt2_test_config.h"
#include "model/gpt2/gpt2.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama.h"
#include "model/llama/llama_model.h"
#include "model/lora/lora_adapter.h"
#include "model/lora/lora_graph.h"
#include "llama_test_config.h"

namespace orion::model {
namespace {

using Targets = std::vector<std::string>;

TEST(LoraTargets, ShortAndHuggingFaceNamesMapToEachArchitecturesLayers) {
  EXPECT_EQ(lora_targets("llama", "q,v"), (Targets{"self_attn.q_proj", "self_attn.v_proj"}));
  EXPECT_EQ(lora_targets("llama", "down_proj, gate"), (Targets{"mlp.down_proj", "mlp.gate_proj"}));
  EXPECT_EQ(lora_targets("llama", "").size(), 7u);
  EXPECT_EQ(lora_targets("gpt2", "q,k,v,o"), (Targets{"attn.c_attn", "attn.c_proj"}));
  EXPECT_EQ(lora_targets("gpt2", "c_proj"), (Targets{"attn.c_proj", "mlp.c_proj"}));
  EXPECT_EQ(lora_targets("gpt2", "all"), (Targets{"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}));
  EXPECT_THROW(lora_targets("gpt2", "q"), Error);      // q, k and v are one layer there
  EXPECT_THROW(lora_targets("gpt2", "gate"), Error);   // no gated MLP
  EXPECT_THROW(lora_targets("llama", "c_fc"), Error);
  EXPECT_THROW(lora_targets("llama", "q,,v"), Error);  // an empty entry
}

TEST(LoraTargets, MatchWholeNameSegments) {
  LoraConfig c;
  c.targets = {"q_proj", "attn.c_proj"};
  EXPECT_TRUE(lora_targets_module(c, "model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(lora_targets_module(c, "model.layers.3.self_attn.xq_proj"));
  EXPECT_TRUE(lora_targets_module(c, "h.0.attn.c_proj"));
  EXPECT_FALSE(lora_targets_module(c, "h.0.mlp.c_proj"));
}

// The shapes of A [rank, in] and B [out, rank] come from the weight, whichever its layout.
TEST(LoraGraph, AddsAAndBOfTheRightShapesInBothLayouts) {
  LoraConfig c;
  c.rank = 3;
  c.targets = lora_targets("gpt2", "");
  const ir::Graph g = with_lora(gpt2_graph(testing::small_gpt2_config(), {4, 0, false}), c, 2.0);
  const std::int64_t C = testing::small_gpt2_config().n_embd;
  const auto shape_of = [&](const std::string& name) { return g.node(*g.find(name)).type.shape; };
  EXPECT_EQ(shape_of("h.0.attn.c_attn.lora_A.weight"), (Shape{3, C}));
  EXPECT_EQ(shape_of("h.0.attn.c_attn.lora_B.weight"), (Shape{3 * C, 3}));
  EXPECT_EQ(shape_of("h.0.mlp.c_proj.lora_A.weight"), (Shape{3, 4 * C}));
  LlamaConfig l = testing::small_llama_config({2, 64, 4, 2, 96, 300, false, 64});
  c.targets = lora_targets("llama", "k,down");
  const ir::Graph lg = with_lora(llama_graph(l, {4, 0, false}), c, 1.0);
  EXPECT_EQ(lg.node(*lg.find("model.layers.1.self_attn.k_proj.lora_B.weight")).type.shape, (Shape{l.kv_width(), 3}));
  EXPECT_EQ(lg.node(*lg.find("model.layers.1.mlp.down_proj.lora_A.weight")).type.shape, (Shape{3, 96}));
  EXPECT_FALSE(lg.find("model.layers.1.self_attn.q_proj.lora_A.weight"));
  c.targets = {"no_such_layer"};
  EXPECT_THROW(with_lora(lg, c, 1.0), Error);
}

// B starts at zero: the adapted graph computes the base model's logits bit for bit.
TEST(LoraGraph, ANewAdapterLeavesTheLogitsExactlyAsTheBaseModels) {
  const Gpt2Config cfg = testing::small_gpt2_config();
  const TensorMap w = gpt2_init_weights(cfg, 4);
  const ir::Graph base = gpt2_graph(cfg, {6, 0, false});
  LoraConfig c;
  c.rank = 4;
  c.alpha = 16;
  c.targets = lora_targets("gpt2", "");
  const LoraAdapter a = init_lora_adapter(base, c, 9);
  EXPECT_EQ(a.weights.size(), 2u * 4 * static_cast<std::size_t>(cfg.n_layer));
  TensorMap feed = w;
  for (const auto& [name, t] : a.weights) feed[name] = t;
  const std::vector<std::int32_t> tokens = {3, 1, 4, 1, 5, 9}, positions = {0, 1, 2, 3, 4, 5};
  feed["tokens"] = Tensor::from_ints({6}, tokens);
  feed["positions"] = Tensor::from_ints({6}, positions);
  const Tensor want = exec::CpuExecutor(base).run(feed).at(0);
  const Tensor got = exec::CpuExecutor(with_lora(base, c, c.scale())).run(feed).at(0);
  ASSERT_EQ(got.shape(), want.shape());
  for (std::size_t i = 0; i < got.span<const float>().size(); ++i) ASSERT_EQ(got.span<const float>()[i], want.span<const float>()[i]);
}

}  // namespace
}  // namespace orion::model
