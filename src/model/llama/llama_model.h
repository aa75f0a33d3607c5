#pragma once
// A Llama-family model folder (model_type llama, mistral, qwen2 or qwen3): config.json and
// model.safetensors, or shards through model.safetensors.index.json (formats/checkpoint.h), with
// Hugging Face's tensor names, any float dtype (bf16 and f16 widened to f32 once; f32 tensors
// stay zero-copy views of the mapping). Loading checks the memory first and every tensor the
// config needs before anything runs. `orion convert`'s stored formats are GPT-2 only for now,
// and refused with a message saying so.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "exec/cpu/executor.h"
#include "model/causal_lm.h"
#include "model/llama/llama_config.h"
#include "model/formats/named_weights.h"

namespace orion::model {

class LlamaModel final : public CausalLm {
 public:
  // Throws orion::Error naming the file and tensor for a missing or mis-shaped tensor, a bad
  // config or an unreadable file.
  static LlamaModel load(const std::string& dir);
  // The same with DIR's config.json already read (load_any_model). With `keep`, only the params
  // it selects are read: a part of the model, which serves a pipeline stage (engine/pipeline.h)
  // and nothing that builds the whole graph.
  static LlamaModel load(const std::string& dir, LlamaConfig config, const ParamFilter& keep = {});
  // A model from weights in memory (tests, `orion init`); with `keep`, the part it selects.
  static LlamaModel from_weights(LlamaConfig config, TensorMap weights, std::string source, const ParamFilter& keep = {});

  const LlamaConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }

  // CausalLm: the graphs of model/llama/llama.h.
  std::string_view arch() const override { return config_.model_type; }
  ir::Graph decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const override;
  ir::Graph ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences = 1, double residual_scale = 1) const override;
  std::string config_json() const override { return llama_config_json(config_); }
  // Every param in f32. An MLX quantized folder's matrices are dequantized on the first call
  // (once, shared by copies of the model): the fast decoder, which runs them as stored, never
  // asks, so a 4-bit model is never widened for it.
  const TensorMap& weights() const override;
  // One param in f32 without widening the rest: a float one as weights() holds it, a quantized
  // one dequantized (a copy).
  Tensor weight(const std::string& name) const;
  // The params held in floats, never widening: every one of a float checkpoint, the unquantized
  // ones of an MLX quantized folder.
  const TensorMap& float_weights() const { return weights_; }
  // An MLX quantized folder's matrices as stored, by param name; empty for a float checkpoint.
  const QuantizedMatrices& quantized() const { return quantized_; }
  // Whether weights() has widened the quantized matrices (what the tests hold the fast decoder to).
  bool widened() const {
    std::lock_guard lock(widened_->mutex);
    return widened_->all.has_value();
  }
  std::int64_t layers() const override { return config_.num_hidden_layers; }
  std::int64_t kv_width() const override { return config_.kv_width(); }
  std::int64_t context() const override { return config_.context(); }
  std::int64_t local_window() const override {
    return config_.sliding_layers.empty() ? 0 : config_.sliding_window.value_or(0);
  }
  std::optional<RecurrentState> recurrent_state(std::int64_t layer) const override;
  std::set<std::string, std::less<>> ane_host_nodes(const ir::Graph& graph) const override;
  std::int64_t vocab_size() const override { return config_.vocab_size; }
  std::int64_t eos_token_id() const override { return config_.eos_token_id(); }
  std::vector<std::int32_t> stop_ids() const override;
  std::optional<std::int32_t> bos_token_id() const override;

 private:
  LlamaConfig config_;
  TensorMap weights_;  // every param, or the float ones of an MLX quantized folder
  QuantizedMatrices quantized_;
  struct Widened {
    std::mutex mutex;
    std::optional<TensorMap> all;
  };
  std::shared_ptr<Widened> widened_ = std::make_shared<Widened>();
  std::string dir_;
};

// Llama's initialisation (Hugging Face's _init_weights with initializer_range 0.02): every
// matrix and the embedding normal(0, 0.02), RMSNorm gains 1. Deterministic for a seed on every
// platform.
TensorMap llama_init_weights(const LlamaConfig& config, std::uint64_t seed);

// The graphs' params (names and shapes) of a model with `config`.
ParamShapes llama_param_shapes(const LlamaConfig& config);

}  // namespace orion::model
