#include "model/gpt2/gpt2_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"

namespace orion::model {

using nlohmann::json;

Gpt2BlockShape Gpt2Config::block_shape(std::int64_t seq) const {
  Gpt2BlockShape s;
  s.seq = seq;
  s.dim = n_embd;
  s.heads = n_head;
  s.hidden_size = hidden();
  s.epsilon = layer_norm_epsilon;
  return s;
}

void Gpt2Config::validate(const std::string& source) const {
  config_check_range(n_embd, "n_embd", 1 << 16, source);
  config_check_range(n_layer, "n_layer", 1 << 10, source);
  config_check_range(n_head, "n_head", 1 << 10, source);
  config_check_range(n_positions, "n_positions", 1 << 20, source);
  config_check_range(vocab_size, "vocab_size", 1 << 24, source);
  if (n_inner < 0 || n_inner > (1 << 18)) throw Error::in_file(source, "\"n_inner\" is out of range");
  config_check_multiple(n_embd, "n_embd", n_head, "n_head", source);
  if (!(layer_norm_epsilon > 0 && layer_norm_epsilon < 1))
    throw Error::in_file(source, "\"layer_norm_epsilon\" must be in (0, 1)");
  if (eos_token_id < 0 || eos_token_id >= vocab_size)
    throw Error::in_file(source, "\"eos_token_id\" " + std::to_string(eos_token_id) + " is outside the vocabulary");
}

std::int64_t Gpt2Config::parameter_count() const {
  const std::int64_t C = n_embd, F = hidden();
  const std::int64_t block = 2 * 2 * C + C * 3 * C + 3 * C + C * C + C + C * F + F + F * C + C;
  return vocab_size * C + n_positions * C + n_layer * block + 2 * C;
}

std::uint64_t Gpt2Config::weight_bytes(std::uint64_t bytes_per_weight) const {
  return static_cast<std::uint64_t>(parameter_count()) * bytes_per_weight;
}

std::uint64_t Gpt2Config::kv_cache_bytes() const {
  return 2 * static_cast<std::uint64_t>(n_layer) * static_cast<std::uint64_t>(n_positions) *
         static_cast<std::uint64_t>(n_embd) * sizeof(float);
}

Gpt2Config parse_gpt2_config(std::string_view text, const std::string& source) {
  return gpt2_config_from_json(parse_config_object(text, source), source);
}

Gpt2Config gpt2_config_from_json(const json& j, const std::string& source) {
  if (const std::string mt = config_model_type(j, source); !mt.empty() && mt != "gpt2")
    throw Error::in_file(source, "model_type is \"" + mt + "\", expected \"gpt2\"");
  Gpt2Config c;
  c.n_embd = config_int(j, "n_embd", c.n_embd, source, true);
  c.n_layer = config_int(j, "n_layer", c.n_layer, source, true);
  c.n_head = config_int(j, "n_head", c.n_head, source, true);
  c.n_positions = config_int(j, "n_positions", config_int(j, "n_ctx", c.n_positions, source), source);
  c.vocab_size = config_int(j, "vocab_size", c.vocab_size, source, true);
  c.n_inner = config_int(j, "n_inner", 0, source);
  c.layer_norm_epsilon = config_real(j, "layer_norm_epsilon", c.layer_norm_epsilon, source);
  c.eos_token_id = config_int(j, "eos_token_id", c.vocab_size - 1, source);
  if (auto act = j.find("activation_function"); act != j.end() && act->is_string() &&
      *act != "gelu_new" && *act != "gelu_pytorch_tanh")
    throw Error::in_file(source, "activation_function \"" + act->get<std::string>() +
                                     "\" is not supported (GPT-2 uses gelu_new, the tanh form)");
  c.validate(source);
  return c;
}

Gpt2Config read_gpt2_config(const std::string& path) {
  return parse_gpt2_config(read_config_text(path), path);
}

std::string gpt2_config_json(const Gpt2Config& c) {
  json j = {
      {"model_type", "gpt2"},
      {"architectures", {"GPT2LMHeadModel"}},
      {"activation_function", "gelu_new"},
      {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"n_positions", c.n_positions},
      {"n_ctx", c.n_positions},
      {"n_inner", c.n_inner > 0 ? json(c.n_inner) : json(nullptr)},
      {"vocab_size", c.vocab_size},
      {"layer_norm_epsilon", c.layer_norm_epsilon},
      {"bos_token_id", c.eos_token_id},
      {"eos_token_id", c.eos_token_id},
      {"tie_word_embeddings", true},
  };
  return j.dump(2) + "\n";
}

}  // namespace orion::model
