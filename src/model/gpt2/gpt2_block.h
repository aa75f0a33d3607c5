#pragma once
// One GPT-2 transformer block as an IR graph: pre-norm attention with a causal mask, then a
// GELU MLP, each with a residual. Params carry Hugging Face's GPT-2 names ("h.0.attn.c_attn.weight";
// Conv1D weights are [in, out]), so the same builder serves the whole model later.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/random.h"
#include "core/tensor.h"
#include "ir/builder.h"

namespace orion::model {

struct Gpt2BlockShape {
  std::int64_t seq = 64;     // tokens in the window
  std::int64_t batch = 1;    // windows side by side (x is [batch * seq, dim]); > 1 without past only
  std::int64_t dim = 256;    // n_embd
  std::int64_t heads = 4;    // n_head
  double epsilon = 1e-5;     // layer_norm_epsilon
  std::int64_t hidden_size = 0;  // n_inner; 0: 4 * dim
  std::int64_t hidden() const { return hidden_size > 0 ? hidden_size : 4 * dim; }
  std::int64_t head_dim() const { return dim / heads; }
};

// What one block's attention sees besides its own window: an additive mask [seq, past + seq]
// (0 where a query may look, -inf where not), and for decoding the keys and values of `past`
// earlier positions, [past, dim] each (absent when past is 0).
struct AttentionContext {
  ir::Value mask;
  std::optional<ir::Value> past_k, past_v;
  // The cache kept apart from the new token (model/attention.h, attention_over_cache): the
  // ANE form of a one-token decode step.
  bool cache_apart = false;
  std::optional<ir::Value> rows_mask;  // cache_apart: a chunk's causal mask over its rows
};

struct BlockOutputs {
  ir::Value y;     // [batch * seq, dim]
  ir::Value k, v;  // this window's keys and values [batch * seq, dim], for the KV cache
};

// Adds block `layer` to `b`, reading x [batch * seq, dim].
BlockOutputs gpt2_block(ir::Builder& b, ir::Value x, const Gpt2BlockShape& shape, int layer,
                        const AttentionContext& ctx);

// The additive causal mask [seq, seq] of a window that starts at position 0; with `window`, a
// row also sees no key `window` or more positions before it (a sliding-window layer's).
ir::Value causal_mask(ir::Builder& b, std::int64_t seq, std::int64_t window = 0);

// A graph of one block: input "x" [seq, dim] -> output [seq, dim].
ir::Graph gpt2_block_graph(const Gpt2BlockShape& shape);

// Values for every param of `graph` as GPT-2 initialises them: norm gains 1, biases 0, weight
// matrices normal(0, 0.02) (the residual projections scaled by 1/sqrt(2 * n_layer)).
std::map<std::string, Tensor, std::less<>> gpt2_init_params(const ir::Graph& graph, int n_layer,
                                                            Rng& rng);

// Multiply-adds of one block over the window (the figure GFLOP/s is computed from: 2 per MAC).
std::int64_t gpt2_block_macs(const Gpt2BlockShape& shape);

}  // namespace orion::model
