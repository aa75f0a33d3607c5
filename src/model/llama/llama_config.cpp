#include "model/llama/llama_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"

namespace orion::model {

using nlohmann::json;

void LlamaConfig::validate(const std::string& source) const {
  config_check_range(hidden_size, "hidden_size", 1 << 16, source);
  config_check_range(intermediate_size, "intermediate_size", 1 << 18, source);
  config_check_range(num_hidden_layers, "num_hidden_layers", 1 << 10, source);
  config_check_range(num_attention_heads, "num_attention_heads", 1 << 10, source);
  config_check_range(num_key_value_heads, "num_key_value_heads", 1 << 10, source);
  config_check_range(max_position_embeddings, "max_position_embeddings", 1 << 20, source);
  config_check_range(vocab_size, "vocab_size", 1 << 24, source);
  config_check_multiple(hidden_size, "hidden_size", num_attention_heads, "num_attention_heads", source);
  // rotate_half pairs the two halves of each head.
  if (head_dim() % 2 != 0)
    throw Error::in_file(source, "the head size hidden_size / num_attention_heads = " + std::to_string(head_dim()) +
                                     " is odd; rotary embeddings need an even one");
  config_check_multiple(num_attention_heads, "num_attention_heads", num_key_value_heads, "num_key_value_heads", source);
  if (!(rms_norm_eps > 0 && rms_norm_eps < 1)) throw Error::in_file(source, "\"rms_norm_eps\" must be in (0, 1)");
  if (!(rope_theta > 1)) throw Error::in_file(source, "\"rope_theta\" must be greater than 1");
  if (bos_token_id && (*bos_token_id < 0 || *bos_token_id >= vocab_size))
    throw Error::in_file(source, "\"bos_token_id\" " + std::to_string(*bos_token_id) + " is outside the vocabulary of " +
                                     std::to_string(vocab_size));
  if (eos_token_id < 0 || eos_token_id >= vocab_size)
    throw Error::in_file(source, "\"eos_token_id\" " + std::to_string(eos_token_id) + " is outside the vocabulary of " +
                                     std::to_string(vocab_size));
}

std::int64_t LlamaConfig::parameter_count() const {
  const std::int64_t C = hidden_size, F = intermediate_size, KV = kv_width();
  const std::int64_t block = C * C + 2 * C * KV + C * C + 3 * C * F + 2 * C;
  return vocab_size * C * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * block + C;
}

LlamaConfig stories110m_config() {
  LlamaConfig c;
  c.num_hidden_layers = 12;
  c.hidden_size = 768;
  c.num_attention_heads = c.num_key_value_heads = 12;
  c.intermediate_size = 2048;
  c.max_position_embeddings = 1024;
  c.vocab_size = 32000;
  return c;
}

LlamaConfig parse_llama_config(std::string_view text, const std::string& source) {
  return llama_config_from_json(parse_config_object(text, source), source);
}

LlamaConfig llama_config_from_json(const json& j, const std::string& source) {
  if (const std::string mt = config_model_type(j, source); mt != "llama")
    throw Error::in_file(source, "model_type is \"" + mt + "\", expected \"llama\"");
  LlamaConfig c;
  c.hidden_size = config_int(j, "hidden_size", 0, source, true);
  c.intermediate_size = config_int(j, "intermediate_size", 0, source, true);
  c.num_hidden_layers = config_int(j, "num_hidden_layers", 0, source, true);
  c.num_attention_heads = config_int(j, "num_attention_heads", 0, source, true);
  c.num_key_value_heads = config_int(j, "num_key_value_heads", c.num_attention_heads, source);
  c.vocab_size = config_int(j, "vocab_size", 0, source, true);
  c.rms_norm_eps = config_real(j, "rms_norm_eps", c.rms_norm_eps, source);
  c.rope_theta = config_real(j, "rope_theta", c.rope_theta, source);
  c.max_position_embeddings = config_int(j, "max_position_embeddings", c.max_position_embeddings, source);
  c.tie_word_embeddings = config_bool(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  if (auto bos = j.find("bos_token_id"); bos != j.end() && bos->is_null())
    c.bos_token_id.reset();
  else
    c.bos_token_id = config_int(j, "bos_token_id", 1, source);
  if (auto eos = j.find("eos_token_id"); eos != j.end() && eos->is_array())
    throw Error::in_file(source, "key \"eos_token_id\" is a list; Orion supports one end-of-text id");
  c.eos_token_id = config_int(j, "eos_token_id", c.eos_token_id, source);

  if (auto act = j.find("hidden_act"); act != j.end() && !act->is_null() && *act != "silu")
    throw Error::in_file(source, "key \"hidden_act\" is " + act->dump() + "; Llama's feed-forward uses \"silu\"");
  if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null())
    throw Error::in_file(source, "key \"rope_scaling\" is " + rs->dump() + "; only unscaled rotary embeddings are supported");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (config_bool(j, key, false, source))
      throw Error::in_file(source, std::string("key \"") + key + "\" is true; Orion's Llama has no biases");
  if (c.num_attention_heads > 0) {
    const std::int64_t hd = config_int(j, "head_dim", c.hidden_size / c.num_attention_heads, source);
    if (hd != c.hidden_size / c.num_attention_heads)
      throw Error::in_file(source, "key \"head_dim\" is " + std::to_string(hd) +
                                       "; only hidden_size / num_attention_heads is supported");
  }
  c.validate(source);
  return c;
}

LlamaConfig read_llama_config(const std::string& path) { return parse_llama_config(read_config_text(path), path); }

std::string llama_config_json(const LlamaConfig& c) {
  json j = {
      {"model_type", "llama"},
      {"architectures", {"LlamaForCausalLM"}},
      {"hidden_act", "silu"},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", nullptr},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"vocab_size", c.vocab_size},
      {"bos_token_id", c.bos_token_id ? json(*c.bos_token_id) : json(nullptr)},
      {"eos_token_id", c.eos_token_id},
      {"initializer_range", 0.02},
      {"torch_dtype", "float32"},
  };
  return j.dump(2) + "\n";
}

}  // namespace orion::model
