#pragma once
// The Llama model as IR graphs, with Hugging Face's parameter names: token embedding
// (model.embed_tokens.weight), num_hidden_layers pre-norm blocks of RMSNorm, grouped-query
// attention with rotary position embeddings (model/llama/rope.h) and a SwiGLU feed-forward
// (down(silu(gate(x)) * up(x))), no biases, the final RMSNorm (model.norm.weight) and the head
// (lm_head.weight, or the embedding when tie_word_embeddings). Linear weights are stored as
// PyTorch's nn.Linear stores them, [out, in].
//
// Inputs and outputs follow model/causal_lm.h (GPT-2's conventions); the cached keys are
// rotated already, as Hugging Face caches them, and a layer's cache is
// [positions, num_key_value_heads * head_dim]: grouped-query attention stores each key/value
// head once, and the num_attention_heads / num_key_value_heads query heads of a group read it
// together.
//
// The ANE form (options.ane_form; CausalLm::ane_graph, what model/decoder_ane_package.h
// compiles) is the same function in ops the ANE compiler lowers on [1, C, 1, S] rows: the
// rotary tables tiled across the heads (still gathered on the host by positions), rotate_half
// as a product with a constant signed permutation (model/llama/rope.h's apply_rope_product) instead
// of slices and a concat, and grouped-query keys and values expanded to every query head by a
// constant 0/1 product, so attention is GPT-2's (model/attention.h). The KV cache keeps the
// key/value heads only, as in the ordinary form.
//
// For training (batch, loss) the graph follows model/gpt2/gpt2.h: tokens, positions and targets are
// i32[batch * seq], `batch` windows one after the other, folded into the rows of every
// projection; attention sees the windows apart ([batch, heads, seq, head_dim]); each row's
// rotary angles come from its own position; the single output is `loss`.
#include <cstdint>

#include "core/random.h"
#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "model/decoder_graph.h"
#include "model/llama/llama_config.h"

namespace orion::model {

using LlamaGraphOptions = DecoderGraphOptions;

// The scope of the ops that take Qwen3.5's gated q_proj apart into queries and gates
// ("model.layers.L.q_gate_split."): a device's program runs them on the host.
inline constexpr const char* kGateSplitScope = "q_gate_split";

ir::Graph llama_graph(const LlamaConfig& config, const LlamaGraphOptions& options);

}  // namespace orion::model
