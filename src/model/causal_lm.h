#pragma once
// What the graph session, generation and perplexity need of a model, whichever architecture
// (Gpt2Model, LlamaModel): its decoding graphs, the weights they bind, and the sizes of its KV
// cache. Every architecture's graphs keep GPT-2's conventions (model/gpt2/gpt2.h):
//   inputs  tokens i32[seq], positions i32[seq]; with past > 0 also mask f32[seq, past + seq],
//           past_k.L and past_v.L f32[past, kv_width] per layer L;
//   outputs logits f32[seq, vocab] (f32[1, vocab] with last_only), then k.L and v.L
//           f32[seq, kv_width] per layer: this window's keys and values for the cache.
// A layer with a recurrent state instead of a cache (recurrent_state(L): Qwen3.5's Gated
// DeltaNet) takes past_conv.L and past_state.L in place of past_k.L and past_v.L, and gives
// conv.L and state.L, the whole state after the window, in place of k.L and v.L.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "exec/cpu/executor.h"
#include "ir/graph.h"

namespace orion::model {

class CausalLm {
 public:
  virtual ~CausalLm() = default;

  // config.json's model_type: "gpt2", "llama".
  virtual std::string_view arch() const = 0;
  // A window of `seq` tokens after `past` cached positions.
  virtual ir::Graph decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const = 0;
  // The same function as decoding_graph(seq, past, false), written in ops the ANE compiler lowers, for
  // model/decoder_ane_package.h; GPT-2's decoding graph already is. `sequences` > 1: a batched
  // decode step, one row of each sequence (DecoderGraphOptions::sequences). `residual_scale` (a
  // power of two; the Llama family only): the residual stream divided by it throughout, so that it
  // fits fp16 (DecoderGraphOptions::residual_scale); the logits are the same.
  virtual ir::Graph ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences = 1, double residual_scale = 1) const = 0;
  // config.json's text: what, with the weights, a compiled package depends on.
  virtual std::string config_json() const = 0;
  // Parameters by the graphs' names, f32, in the graphs' layout.
  virtual const TensorMap& weights() const = 0;
  virtual std::int64_t layers() const = 0;
  // Columns of one layer's cached keys (and values).
  virtual std::int64_t kv_width() const = 0;
  virtual std::int64_t context() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t eos_token_id() const = 0;
  // Every id that ends a generated text (config.json's eos_token_id may list several).
  virtual std::vector<std::int32_t> stop_ids() const { return {static_cast<std::int32_t>(eos_token_id())}; }
  // The token every text starts with (Llama's BOS), if the model was trained with one.
  virtual std::optional<std::int32_t> bos_token_id() const = 0;
  // The shapes of layer `layer`'s recurrent state (its conv and state inputs and outputs),
  // when it has one instead of a KV cache.
  struct RecurrentState {
    Shape conv, state;
  };
  virtual std::optional<RecurrentState> recurrent_state(std::int64_t /*layer*/) const { return std::nullopt; }
  // The nodes of an ANE-form graph (ane_graph's) that a device program runs on the host (a
  // recurrent layer's state update); empty for most models.
  virtual std::set<std::string, std::less<>> ane_host_nodes(const ir::Graph& /*graph*/) const { return {}; }
  // The positions a sliding-window layer's attention reaches (its own included) when some layers
  // slide and others do not (Gemma 3): graphs after a cache then take "mask_local" beside "mask",
  // hiding also the keys this many or more positions back. 0: no such layers.
  virtual std::int64_t local_window() const { return 0; }

 protected:
  CausalLm() = default;
  CausalLm(const CausalLm&) = default;
  CausalLm(CausalLm&&) = default;
  CausalLm& operator=(const CausalLm&) = default;
  CausalLm& operator=(CausalLm&&) = default;
};

}  // namespace orion::model
