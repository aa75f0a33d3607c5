#pragma once
// GPT-2's hyperparameters, as Hugging Face's config.json spells them. Read once per model:
// the one source of a model's shape.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "model/gpt2/gpt2_block.h"

namespace orion::model {

struct Gpt2Config {
  std::int64_t n_embd = 768;
  std::int64_t n_layer = 12;
  std::int64_t n_head = 12;
  std::int64_t n_positions = 1024;
  std::int64_t vocab_size = 50257;
  std::int64_t n_inner = 0;  // 0: 4 * n_embd (config.json's null)
  double layer_norm_epsilon = 1e-5;
  std::int64_t eos_token_id = 50256;

  std::int64_t hidden() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
  Gpt2BlockShape block_shape(std::int64_t seq) const;
  // Throws orion::Error naming `source` and the first inconsistent field.
  void validate(const std::string& source) const;
  std::int64_t parameter_count() const;
  // Bytes of the weights at `bytes_per_weight` (4: f32, 2: f16, 1: int8), and of the fast
  // decoder's key/value cache for the whole context (f32). Exact for a valid config (no overflow).
  std::uint64_t weight_bytes(std::uint64_t bytes_per_weight) const;
  std::uint64_t kv_cache_bytes() const;
};

// Reads a Hugging Face GPT-2 config.json. Errors name the file and the key.
Gpt2Config read_gpt2_config(const std::string& path);
Gpt2Config parse_gpt2_config(std::string_view json_text, const std::string& source);
// The same from a config already parsed (load_any_model reads model_type from it first).
Gpt2Config gpt2_config_from_json(const nlohmann::json& j, const std::string& source);
// The config.json text for `c` (model_type "gpt2", the keys Hugging Face writes).
std::string gpt2_config_json(const Gpt2Config& c);

}  // namespace orion::model
