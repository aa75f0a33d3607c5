#pragma once
// A Llama-family model's hyperparameters, as Hugging Face's LlamaConfig spells them in
// config.json. Read once per model: the one source of its shape. Absent optional keys take
// LlamaConfig's defaults.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace orion::model {

struct LlamaConfig {
  std::int64_t hidden_size = 4096;
  std::int64_t intermediate_size = 11008;
  std::int64_t num_hidden_layers = 32;
  std::int64_t num_attention_heads = 32;
  std::int64_t num_key_value_heads = 32;  // absent: num_attention_heads (no grouping)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  std::int64_t vocab_size = 32000;
  std::optional<std::int64_t> bos_token_id = 1;  // null: texts start without one
  std::int64_t eos_token_id = 2;

  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Columns of one layer's keys (and values): num_key_value_heads * head_dim.
  std::int64_t kv_width() const { return num_key_value_heads * head_dim(); }
  // Throws orion::Error naming `source` and the first inconsistent field.
  void validate(const std::string& source) const;
  std::int64_t parameter_count() const;
};

// The Llama-shaped model Orion's ANE training results are quoted on (llama2.c's stories110M):
// its layers, width, heads (no grouping), feed-forward width, context and vocabulary, with
// LlamaConfig's other defaults (untied head). The one definition `orion init --preset
// stories110m` and `orion bench train --arch stories110m` share.
LlamaConfig stories110m_config();

// Reads a Hugging Face Llama config.json. Errors name the file and the key; keys that change
// the architecture in ways Orion does not implement (rope_scaling, attention_bias, mlp_bias,
// a hidden_act other than silu, a head_dim other than hidden_size / num_attention_heads) are
// refused by name rather than ignored.
LlamaConfig read_llama_config(const std::string& path);
LlamaConfig parse_llama_config(std::string_view json_text, const std::string& source);
// The same from a config already parsed (load_any_model reads model_type from it first).
LlamaConfig llama_config_from_json(const nlohmann::json& j, const std::string& source);
// The config.json text for `c` (model_type "llama", the keys Hugging Face writes).
std::string llama_config_json(const LlamaConfig& c);

}  // namespace orion::model
