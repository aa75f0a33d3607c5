#pragma once
// A GPT-2 model folder as users download it (Hugging Face layout): config.json,
// model.safetensors, vocab.json and merges.txt. Loading maps the safetensors file and checks
// every tensor the graphs need against the config before anything runs.
#include <string>

#include "exec/cpu/executor.h"
#include "model/gpt2_config.h"

namespace orion::model {

class Gpt2Model {
 public:
  // Throws orion::Error naming the file and tensor for a missing or mis-shaped tensor, a bad
  // config, or an unreadable file.
  static Gpt2Model load(const std::string& dir);
  // A model from weights in memory (tests, `orion init`).
  static Gpt2Model from_weights(Gpt2Config config, exec::Bindings weights, std::string source);

  const Gpt2Config& config() const { return config_; }
  // Parameters by the graphs' names (Hugging Face's, without a "transformer." prefix), f32.
  const exec::Bindings& weights() const { return weights_; }
  const std::string& dir() const { return dir_; }

 private:
  Gpt2Config config_;
  exec::Bindings weights_;
  std::string dir_;
};

// GPT-2's initialisation for every parameter the graphs need: normal(0, 0.02) for embeddings
// and matrices, the residual projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer),
// biases 0, norm gains 1. Deterministic for a seed on every platform.
exec::Bindings gpt2_init_weights(const Gpt2Config& config, std::uint64_t seed);

}  // namespace orion::model
