#pragma once
// A GPT-2 model folder: config.json and model.safetensors, either as Hugging Face writes them
// ([in, out] Conv1D weights, any float dtype) or as `orion convert` writes them (the decoder's
// [out, in] layout in f32, f16 or q8: stored_weights.h). Loading maps the safetensors file and
// checks every tensor the model needs against the config before anything runs.
#include <memory>
#include <mutex>
#include <string>

#include "exec/cpu/executor.h"
#include "model/causal_lm.h"
#include "model/gpt2/gpt2_config.h"
#include "model/formats/stored_weights.h"

namespace orion::model {

class Gpt2Model final : public CausalLm {
 public:
  // Throws orion::Error naming the file and tensor for a missing or mis-shaped tensor, a bad
  // config, an unknown stored format or an unreadable file.
  static Gpt2Model load(const std::string& dir);
  // The same with DIR's config.json already read (load_any_model).
  static Gpt2Model load(const std::string& dir, Gpt2Config config);
  // A model from weights in memory (tests, `orion init`).
  static Gpt2Model from_weights(Gpt2Config config, TensorMap weights, std::string source);

  const Gpt2Config& config() const { return config_; }
  // Parameters by the graphs' names (Hugging Face's, without a "transformer." prefix), f32, in
  // the graphs' layout: what the graph executor binds. Zero-copy views for an f32 Hugging Face
  // file. For a converted folder they are made on the first call (dequantised, transposed
  // back: a copy of the whole model in f32) and kept, so that the fast decoder, which reads
  // stored() instead, never pays for them. Safe to call from several threads.
  const TensorMap& weights() const override;
  // The weights as `orion convert` stored them; nullptr for a Hugging Face layout folder.
  const StoredWeights* stored() const { return stored_.get(); }
  const std::string& dir() const { return dir_; }

  // CausalLm: the graphs of model/gpt2/gpt2.h.
  std::string_view arch() const override { return "gpt2"; }
  ir::Graph decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const override;
  // GPT-2 takes no residual scale (throws orion::Error for one other than 1).
  ir::Graph ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences = 1, double residual_scale = 1) const override;
  std::string config_json() const override { return gpt2_config_json(config_); }
  std::int64_t layers() const override { return config_.n_layer; }
  std::int64_t kv_width() const override { return config_.n_embd; }
  std::int64_t context() const override { return config_.n_positions; }
  std::int64_t vocab_size() const override { return config_.vocab_size; }
  std::int64_t eos_token_id() const override { return config_.eos_token_id; }
  // GPT-2 texts start with no marker (documents are separated by <|endoftext|>).
  std::optional<std::int32_t> bos_token_id() const override { return std::nullopt; }

 private:
  struct GraphWeights {
    std::once_flag made;
    TensorMap weights;
  };
  Gpt2Config config_;
  std::shared_ptr<const StoredWeights> stored_;
  std::shared_ptr<GraphWeights> graph_ = std::make_shared<GraphWeights>();
  std::string dir_;
};

// GPT-2's initialisation for every parameter the graphs need: normal(0, 0.02) for embeddings
// and matrices, the residual projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer),
// biases 0, norm gains 1. Deterministic for a seed on every platform.
TensorMap gpt2_init_weights(const Gpt2Config& config, std::uint64_t seed);

// The graphs' params (names and shapes, in the graphs' layout) of a model with `config`.
std::vector<std::pair<std::string, Shape>> gpt2_param_shapes(const Gpt2Config& config);

}  // namespace orion::model
