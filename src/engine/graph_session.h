#pragma once
// Running a model (any CausalLm: GPT-2, Llama) token by token with a KV cache on the CPU's
// graph executor. The cache lives outside the graphs (per layer, keys and values
// [context, kv_width]); each step binds the filled part
// and appends the step's keys and values. A layer with a recurrent state instead
// (CausalLm::recurrent_state: Qwen3.5's Gated DeltaNet) binds its state and takes the new one. Decode graphs are built per power-of-two bucket of
// cached positions, so a whole generation builds a handful of graphs, not one per token.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "exec/cpu/executor.h"
#include "engine/decoder.h"
#include "model/causal_lm.h"

namespace orion::engine {

class GraphSession final : public Decoder {
 public:
  explicit GraphSession(const model::CausalLm& model, exec::CpuOptions options = {});
  ~GraphSession() override;

  // Runs `tokens` after what is cached and appends them to the cache; returns the logits of
  // the last token [vocab]. Throws orion::Error when the context would overflow or a token is
  // outside the vocabulary.
  std::vector<float> prefill(std::span<const std::int32_t> tokens) override;
  using Decoder::decode;

  // Logits of every position of a window starting at position 0 [tokens, vocab], without
  // touching the cache (perplexity, tests).
  Tensor window_logits(std::span<const std::int32_t> tokens);

  // Takes over a cache another engine filled (a prefill on the ANE): per layer the keys and
  // values of positions [0, n), [n, kv_width] each; decoding continues at position n. Throws
  // orion::Error for a model with recurrent layers, whose state is not a cache.
  void load_cache(std::span<const Tensor> k, std::span<const Tensor> v);

  std::int64_t position() const override { return position_; }
  std::int64_t context() const override { return model_.context(); }
  void reset() override { position_ = 0; }
  const model::CausalLm& model() const { return model_; }

 private:
  exec::CpuExecutor& executor(std::int64_t seq, std::int64_t past, bool last_only);
  void check_tokens(std::span<const std::int32_t> tokens) const;
  // The weights plus the inputs of a window of `tokens` starting at position `start`.
  TensorMap window_inputs(std::span<const std::int32_t> tokens, std::int64_t start) const;

  const model::CausalLm& model_;
  exec::CpuOptions options_;
  std::map<std::tuple<std::int64_t, std::int64_t, bool>, std::unique_ptr<exec::CpuExecutor>> executors_;
  // Per layer [context, kv_width]; or a recurrent layer's conv and state.
  std::vector<Tensor> k_cache_, v_cache_;
  std::vector<bool> recurrent_;  // per layer: a recurrent state in k_cache_/v_cache_ (asked once)
  std::int64_t position_ = 0;
};

// The number of cached positions a decode graph is built for: the next power of two >= past,
// at least 16, at most the context.
std::int64_t past_bucket(std::int64_t past, std::int64_t context);

}  // namespace orion::engine
