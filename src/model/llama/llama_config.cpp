#include "model/llama/llama_config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"

namespace orion::model {

using nlohmann::json;

bool is_llama_family(std::string_view model_type) {
  return std::find(std::begin(kLlamaFamilies), std::end(kLlamaFamilies), model_type) != std::end(kLlamaFamilies);
}

std::string llama_family_list() {
  std::string out;
  for (std::string_view f : kLlamaFamilies) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

std::int64_t LlamaConfig::context() const {
  std::int64_t n = std::min(max_position_embeddings, context_cap);
  if (sliding_window && sliding_layers.empty()) n = std::min(n, *sliding_window);
  return n;
}

std::int64_t LlamaConfig::rotary_dim() const {
  return static_cast<std::int64_t>(static_cast<double>(head_dim()) * partial_rotary_factor);  // int(), as transformers
}

double LlamaConfig::query_prescale() const {
  if (query_pre_attn_scalar <= 0) return 1.0;
  return std::sqrt(static_cast<double>(head_dim()) / query_pre_attn_scalar);
}

void LlamaConfig::validate(const std::string& source) const {
  if (!is_llama_family(model_type)) throw Error::in_file(source, "model_type \"" + model_type + "\" is not a Llama family");
  config_check_range(hidden_size, "hidden_size", 1 << 16, source);
  config_check_range(intermediate_size, "intermediate_size", 1 << 18, source);
  config_check_range(num_hidden_layers, "num_hidden_layers", 1 << 10, source);
  config_check_range(num_attention_heads, "num_attention_heads", 1 << 10, source);
  config_check_range(num_key_value_heads, "num_key_value_heads", 1 << 10, source);
  config_check_range(max_position_embeddings, "max_position_embeddings", 1 << 24, source);
  config_check_range(vocab_size, "vocab_size", 1 << 24, source);
  if (head_size > 0)
    config_check_range(head_size, "head_dim", 1 << 12, source);
  else
    config_check_multiple(hidden_size, "hidden_size", num_attention_heads, "num_attention_heads", source);
  // rotate_half pairs the two halves of each head.
  if (head_dim() % 2 != 0)
    throw Error::in_file(source, "the head size " + std::to_string(head_dim()) + " is odd; rotary embeddings need an even one");
  config_check_multiple(num_attention_heads, "num_attention_heads", num_key_value_heads, "num_key_value_heads", source);
  if (sliding_window) config_check_range(*sliding_window, "sliding_window", 1 << 24, source);
  if (!sliding_layers.empty()) {
    if (static_cast<std::int64_t>(sliding_layers.size()) != num_hidden_layers)
      throw Error::in_file(source, "\"layer_types\" lists " + std::to_string(sliding_layers.size()) + " layers, not num_hidden_layers " +
                                       std::to_string(num_hidden_layers));
    if (!sliding_window) throw Error::in_file(source, "\"layer_types\" lists sliding-window layers but \"sliding_window\" is not set");
  }
  if (!linear_layers.empty()) {
    if (static_cast<std::int64_t>(linear_layers.size()) != num_hidden_layers)
      throw Error::in_file(source, "\"layer_types\" lists " + std::to_string(linear_layers.size()) + " layers, not num_hidden_layers " +
                                       std::to_string(num_hidden_layers));
    config_check_range(linear.key_heads, "linear_num_key_heads", 1 << 10, source);
    config_check_range(linear.value_heads, "linear_num_value_heads", 1 << 10, source);
    config_check_range(linear.key_head_dim, "linear_key_head_dim", 1 << 12, source);
    config_check_range(linear.value_head_dim, "linear_value_head_dim", 1 << 12, source);
    config_check_range(linear.conv_kernel, "linear_conv_kernel_dim", 64, source);
    if (linear.conv_kernel < 2) throw Error::in_file(source, "\"linear_conv_kernel_dim\" must be at least 2");
    config_check_multiple(linear.value_heads, "linear_num_value_heads", linear.key_heads, "linear_num_key_heads", source);
  }
  if (!(partial_rotary_factor > 0 && partial_rotary_factor <= 1) || rotary_dim() < 2 || rotary_dim() % 2 != 0)
    throw Error::in_file(source, "\"partial_rotary_factor\" " + std::to_string(partial_rotary_factor) + " rotates " +
                                     std::to_string(rotary_dim()) + " dims of each head; it must rotate an even number, at least 2");
  if (query_pre_attn_scalar < 0 || query_pre_attn_scalar > (1 << 20))
    throw Error::in_file(source, "\"query_pre_attn_scalar\" must be in (0, 2^20]");
  if (!(rms_norm_eps > 0 && rms_norm_eps < 1)) throw Error::in_file(source, "\"rms_norm_eps\" must be in (0, 1)");
  if (!(rope_theta > 1)) throw Error::in_file(source, "\"rope_theta\" must be greater than 1");
  if (rope_scaling.type != RopeScaling::Type::none && !(rope_scaling.factor >= 1 && rope_scaling.factor <= 1024))
    throw Error::in_file(source, "\"rope_scaling\": \"factor\" must be 1 to 1024");
  if (rope_scaling.type == RopeScaling::Type::llama3 &&
      !(rope_scaling.low_freq_factor > 0 && rope_scaling.high_freq_factor > rope_scaling.low_freq_factor &&
        rope_scaling.original_max_position_embeddings > 0))
    throw Error::in_file(source, "\"rope_scaling\" (llama3) needs 0 < low_freq_factor < high_freq_factor and "
                                 "original_max_position_embeddings > 0");
  auto check_id = [&](std::int64_t id, const char* key) {
    if (id < 0 || id >= vocab_size)
      throw Error::in_file(source, std::string("\"") + key + "\" " + std::to_string(id) + " is outside the vocabulary of " +
                                       std::to_string(vocab_size));
  };
  if (bos_token_id) check_id(*bos_token_id, "bos_token_id");
  if (eos_token_ids.empty()) throw Error::in_file(source, "\"eos_token_id\" is an empty list");
  for (std::int64_t id : eos_token_ids) check_id(id, "eos_token_id");
}

std::int64_t LlamaConfig::parameter_count() const {
  const std::int64_t C = hidden_size, F = intermediate_size, Q = q_width(), KV = kv_width(), D = head_dim();
  const std::int64_t attn = C * Q + 2 * C * KV + Q * C + (qkv_bias ? Q + 2 * KV : 0) + (o_bias ? C : 0) + (qk_norm ? 2 * D : 0);
  const std::int64_t gate = attn_output_gate ? C * Q : 0;
  const std::int64_t mlp = 3 * C * F + (sandwich_norms ? 4 : 2) * C;
  // A Gated DeltaNet layer: in_proj_qkv, _z, _b, _a, the convolution, A_log, dt_bias, the gated
  // norm and out_proj.
  const LinearAttention& la = linear;
  const std::int64_t linear_mixer = C * la.conv_width() + 2 * C * la.value_width() + 2 * C * la.value_heads +
                                    la.conv_width() * la.conv_kernel + 2 * la.value_heads + la.value_head_dim;
  std::int64_t layers_total = 0;
  for (std::int64_t l = 0; l < num_hidden_layers; ++l) layers_total += mlp + (linear_layer(l) ? linear_mixer : attn + gate);
  return vocab_size * C * (tie_word_embeddings ? 1 : 2) + layers_total + C;
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

namespace {

const char* scaling_name(RopeScaling::Type t) {
  switch (t) {
    case RopeScaling::Type::none: return "default";
    case RopeScaling::Type::linear: return "linear";
    case RopeScaling::Type::llama3: return "llama3";
  }
  return "?";
}

// rope_scaling (or transformers 5's rope_parameters, which also carries rope_theta).
RopeScaling read_rope_scaling(const json& rs, const char* key, const std::string& source) {
  RopeScaling s;
  if (rs.is_null()) return s;
  const std::string where = std::string("key \"") + key + "\"";
  if (!rs.is_object()) throw Error::in_file(source, where + " must be an object or null, not " + rs.dump());
  auto type = rs.find("rope_type");
  if (type == rs.end()) type = rs.find("type");
  const std::string t = type == rs.end() || type->is_null() ? "default" : type->is_string() ? type->get<std::string>() : "";
  if (t == "default") return s;
  if (t == "linear") {
    s.type = RopeScaling::Type::linear;
  } else if (t == "llama3") {
    s.type = RopeScaling::Type::llama3;
    s.low_freq_factor = config_real(rs, "low_freq_factor", s.low_freq_factor, source);
    s.high_freq_factor = config_real(rs, "high_freq_factor", s.high_freq_factor, source);
    s.original_max_position_embeddings =
        config_int(rs, "original_max_position_embeddings", s.original_max_position_embeddings, source);
  } else {
    throw Error::in_file(source, where + " has rope_type " + (type == rs.end() ? std::string("?") : type->dump()) +
                                     "; Orion implements \"default\", \"linear\" and \"llama3\"");
  }
  s.factor = config_real(rs, "factor", 0, source);
  if (s.factor == 0) throw Error::in_file(source, where + " (" + t + ") has no \"factor\"");
  return s;
}

// The sliding window the family's keys ask for, if any.
std::optional<std::int64_t> read_sliding_window(const json& j, const std::string& mt, const std::string& source) {
  auto sw = j.find("sliding_window");
  if (sw == j.end() || sw->is_null()) return std::nullopt;
  // Qwen2 and Qwen3 write a sliding_window that only applies when use_sliding_window is true.
  if ((mt == "qwen2" || mt == "qwen3") && !config_bool(j, "use_sliding_window", false, source)) return std::nullopt;
  if (mt == "llama") throw Error::in_file(source, "key \"sliding_window\" is set; Llama has no sliding-window attention");
  return config_int(j, "sliding_window", 0, source);
}

// Which layers are of `kind` rather than "full_attention": layer_types, or else every layer but
// each `every_key`-th (its default `every`), as the families' older configs say.
std::vector<bool> read_layer_kinds(const json& j, std::int64_t layer_count, const char* kind, const char* family,
                                   const char* every_key, std::int64_t every, const std::string& source) {
  std::vector<bool> out;
  if (auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
    if (!lt->is_array()) throw Error::in_file(source, "key \"layer_types\" must be a list, not " + lt->dump());
    for (const json& t : *lt) {
      if (t != kind && t != "full_attention")
        throw Error::in_file(source, "key \"layer_types\" lists " + t.dump() + "; " + family + "'s layers are \"" + kind +
                                         "\" or \"full_attention\"");
      out.push_back(t == kind);
    }
    return out;
  }
  every = config_int(j, every_key, every, source);
  if (every < 1) throw Error::in_file(source, std::string("key \"") + every_key + "\" must be at least 1");
  for (std::int64_t l = 0; l < layer_count; ++l) out.push_back((l + 1) % every != 0);
  return out;
}

// Gemma 3's: the norms, the activation's and embedding's scales, the attention scale, and which
// layers slide (layer_types, or every layer but each sliding_window_pattern-th in older configs).
void read_gemma3_switches(const json& j, LlamaConfig& c, const std::string& source) {
  c.norm_plus_one = c.sandwich_norms = c.gelu_mlp = true;
  c.embed_scale = std::sqrt(static_cast<double>(c.hidden_size));
  c.query_pre_attn_scalar = config_real(j, "query_pre_attn_scalar", 256, source);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
    if (auto cap = j.find(key); cap != j.end() && !cap->is_null())
      throw Error::in_file(source, std::string("key \"") + key + "\" is " + cap->dump() +
                                       "; Orion's Gemma 3 has no logit soft-capping (Gemma 2's)");
  c.sliding_window = config_int(j, "sliding_window", 4096, source);
  c.sliding_layers = read_layer_kinds(j, c.num_hidden_layers, "sliding_attention", "Gemma 3", "sliding_window_pattern", 6, source);
}

// Qwen3.5's: which layers are Gated DeltaNet (layer_types, or all but every
// full_attention_interval-th), their shape, and the gated queries.
void read_qwen3_5_switches(const json& j, LlamaConfig& c, const std::string& source) {
  c.norm_plus_one = c.qk_norm = c.attn_output_gate = true;
  if (c.rope_scaling.type != RopeScaling::Type::none)
    throw Error::in_file(source, "the rope is scaled; Orion's Qwen3.5 rotates by the default rope only");
  LinearAttention& la = c.linear;
  la.key_heads = config_int(j, "linear_num_key_heads", la.key_heads, source);
  la.value_heads = config_int(j, "linear_num_value_heads", la.value_heads, source);
  la.key_head_dim = config_int(j, "linear_key_head_dim", la.key_head_dim, source);
  la.value_head_dim = config_int(j, "linear_value_head_dim", la.value_head_dim, source);
  la.conv_kernel = config_int(j, "linear_conv_kernel_dim", la.conv_kernel, source);
  c.linear_layers = read_layer_kinds(j, c.num_hidden_layers, "linear_attention", "Qwen3.5", "full_attention_interval", 4, source);
  for (const char* key : {"num_experts", "moe_intermediate_size"})
    if (auto moe = j.find(key); moe != j.end() && !moe->is_null() && *moe != 0)
      throw Error::in_file(source, std::string("key \"") + key + "\" is set: a mixture-of-experts model (qwen3_5_moe), which Orion does not run");
}

}  // namespace

LlamaConfig llama_config_from_json(const json& j, const std::string& source) {
  LlamaConfig c;
  c.model_type = config_model_type(j, source);
  if (!is_llama_family(c.model_type))
    throw Error::in_file(source, "model_type is \"" + c.model_type + "\", expected one of " + llama_family_list());
  const std::string& mt = c.model_type;
  const bool gemma = mt == "gemma3_text";
  const bool qwen3_5 = mt == "qwen3_5_text";
  c.hidden_size = config_int(j, "hidden_size", 0, source, true);
  c.intermediate_size = config_int(j, "intermediate_size", 0, source, true);
  c.num_hidden_layers = config_int(j, "num_hidden_layers", 0, source, true);
  c.num_attention_heads = config_int(j, "num_attention_heads", 0, source, true);
  c.num_key_value_heads = config_int(j, "num_key_value_heads", c.num_attention_heads, source);
  c.vocab_size = config_int(j, "vocab_size", 0, source, true);
  c.rms_norm_eps = config_real(j, "rms_norm_eps", c.rms_norm_eps, source);
  c.rope_theta = config_real(j, "rope_theta", gemma ? 1e6 : c.rope_theta, source);
  c.max_position_embeddings =
      config_int(j, "max_position_embeddings", gemma ? 131072 : qwen3_5 ? 32768 : c.max_position_embeddings, source);
  c.tie_word_embeddings = config_bool(j, "tie_word_embeddings", gemma, source);
  if (auto rs = j.find("rope_scaling"); rs != j.end()) c.rope_scaling = read_rope_scaling(*rs, "rope_scaling", source);
  if (gemma) c.rope_local_theta = config_real(j, "rope_local_base_freq", 10000.0, source);
  if (auto rp = j.find("rope_parameters"); rp != j.end() && !rp->is_null()) {
    // transformers 5: one object, or (Gemma 3) one per kind of layer.
    const bool per_kind = rp->is_object() && rp->contains("full_attention");
    const json& full = per_kind ? rp->at("full_attention") : *rp;
    c.rope_scaling = read_rope_scaling(full, "rope_parameters", source);
    c.rope_theta = config_real(full, "rope_theta", c.rope_theta, source);
    if (qwen3_5) c.partial_rotary_factor = config_real(full, "partial_rotary_factor", c.partial_rotary_factor, source);
    if (per_kind)
      if (auto local = rp->find("sliding_attention"); local != rp->end() && local->is_object()) {
        if (read_rope_scaling(*local, "rope_parameters", source).type != RopeScaling::Type::none)
          throw Error::in_file(source, "key \"rope_parameters\": the sliding layers' rope is scaled; Orion scales the global layers' only");
        c.rope_local_theta = config_real(*local, "rope_theta", c.rope_local_theta, source);
      }
  }
  if (!gemma) c.sliding_window = read_sliding_window(j, mt, source);
  for (const char* key : {"torch_dtype", "dtype"})  // transformers 5 writes "dtype"
    if (auto d = j.find(key); d != j.end() && d->is_string()) c.torch_dtype = d->get<std::string>();

  if (auto bos = j.find("bos_token_id"); bos != j.end() && bos->is_null())
    c.bos_token_id.reset();
  else
    c.bos_token_id = config_int(j, "bos_token_id", mt.starts_with("qwen") ? -1 : gemma ? 2 : 1, source);
  if (c.bos_token_id == -1) c.bos_token_id.reset();  // Qwen's configs default to none
  if (auto eos = j.find("eos_token_id"); eos != j.end() && eos->is_array()) {
    c.eos_token_ids.clear();
    for (const json& id : *eos) {
      if (!id.is_number_integer())
        throw Error::in_file(source, "key \"eos_token_id\" lists " + id.dump() + ", not an integer id");
      c.eos_token_ids.push_back(id.get<std::int64_t>());
    }
  } else {
    c.eos_token_ids = {config_int(j, "eos_token_id", gemma ? 1 : 2, source)};
  }

  // The family's switches.
  const bool attention_bias = config_bool(j, "attention_bias", false, source);
  if (mt == "qwen2") {
    c.qkv_bias = true;  // Qwen2's attention hard-codes them (and none on o_proj)
  } else {
    c.qkv_bias = c.o_bias = attention_bias;
  }
  c.qk_norm = mt == "qwen3" || gemma;
  if (mt == "qwen3" || gemma || qwen3_5 || j.contains("head_dim")) {
    const std::int64_t derived = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
    const std::int64_t hd = config_int(j, "head_dim", mt == "qwen3" ? 128 : gemma || qwen3_5 ? 256 : derived, source);
    if (hd != derived || mt == "qwen3" || gemma || qwen3_5) c.head_size = hd;
  }
  if (gemma) read_gemma3_switches(j, c, source);
  if (qwen3_5) {
    c.partial_rotary_factor = config_real(j, "partial_rotary_factor", 0.25, source);
    if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object())
      c.partial_rotary_factor = config_real(*rp, "partial_rotary_factor", c.partial_rotary_factor, source);
    read_qwen3_5_switches(j, c, source);
  }

  // What would change the maths and Orion does not implement: refused by name.
  const char* expected_act = gemma ? "gelu_pytorch_tanh" : "silu";
  for (const char* key : {"hidden_act", "hidden_activation"})
    if (auto act = j.find(key); act != j.end() && !act->is_null() && *act != expected_act)
      throw Error::in_file(source, std::string("key \"") + key + "\" is " + act->dump() + "; the " + mt +
                                       " feed-forward Orion runs uses \"" + expected_act + "\"");
  if (config_bool(j, "mlp_bias", false, source))
    throw Error::in_file(source, "key \"mlp_bias\" is true; Orion's " + mt + " has no feed-forward biases");
  if (double f = config_real(j, "partial_rotary_factor", 1.0, source); f != 1.0 && !qwen3_5)
    throw Error::in_file(source, "key \"partial_rotary_factor\" is " + std::to_string(f) + "; Orion rotates whole heads");
  c.quantization = read_mlx_quantization(j, source);
  if (auto lt = j.find("layer_types"); !gemma && !qwen3_5 && lt != j.end() && lt->is_array())
    for (const json& t : *lt)
      if (t != "full_attention" && !c.sliding_window)
        throw Error::in_file(source, "key \"layer_types\" lists " + t.dump() + "; Orion runs \"full_attention\" layers");
  c.validate(source);
  return c;
}

LlamaConfig read_llama_config(const std::string& path) { return parse_llama_config(read_config_text(path), path); }

std::string llama_config_json(const LlamaConfig& c) {
  static const std::map<std::string, std::string> kArchitectures = {{"llama", "LlamaForCausalLM"},
                                                                    {"mistral", "MistralForCausalLM"},
                                                                    {"qwen2", "Qwen2ForCausalLM"},
                                                                    {"qwen3", "Qwen3ForCausalLM"},
                                                                    {"gemma3_text", "Gemma3ForCausalLM"},
                                                                    {"qwen3_5_text", "Qwen3_5ForCausalLM"}};
  json j = {
      {"model_type", c.model_type},
      {"architectures", {kArchitectures.at(c.model_type)}},
      {"hidden_act", "silu"},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim()},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"vocab_size", c.vocab_size},
      {"bos_token_id", c.bos_token_id ? json(*c.bos_token_id) : json(nullptr)},
      {"eos_token_id", c.eos_token_ids.size() == 1 ? json(c.eos_token_ids[0]) : json(c.eos_token_ids)},
      {"initializer_range", 0.02},
      {"torch_dtype", c.torch_dtype},
  };
  if (c.rope_scaling.type == RopeScaling::Type::none) {
    j["rope_scaling"] = nullptr;
  } else {
    json rs = {{"rope_type", scaling_name(c.rope_scaling.type)}, {"factor", c.rope_scaling.factor}};
    if (c.rope_scaling.type == RopeScaling::Type::llama3) {
      rs["low_freq_factor"] = c.rope_scaling.low_freq_factor;
      rs["high_freq_factor"] = c.rope_scaling.high_freq_factor;
      rs["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    }
    j["rope_scaling"] = rs;
  }
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = c.sliding_window.has_value();
    j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
  } else if (c.model_type == "mistral") {
    j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
  }
  if (c.model_type == "gemma3_text") {
    j.erase("hidden_act");
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
    j["rope_local_base_freq"] = c.rope_local_theta;
    j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
    json types = json::array();
    for (bool s : c.sliding_layers) types.push_back(s ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["attn_logit_softcapping"] = nullptr;
    j["final_logit_softcapping"] = nullptr;
    j["pad_token_id"] = 0;
  }
  if (c.model_type == "qwen3_5_text") {
    const LinearAttention& la = c.linear;
    j["linear_num_key_heads"] = la.key_heads;
    j["linear_num_value_heads"] = la.value_heads;
    j["linear_key_head_dim"] = la.key_head_dim;
    j["linear_value_head_dim"] = la.value_head_dim;
    j["linear_conv_kernel_dim"] = la.conv_kernel;
    json types = json::array();
    for (bool linear : c.linear_layers) types.push_back(linear ? "linear_attention" : "full_attention");
    j["layer_types"] = types;
    // transformers 5's form: the rope's base and partial factor in rope_parameters.
    j.erase("rope_theta");
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", c.partial_rotary_factor}};
  }
  if (c.model_type != "qwen2") {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = false;
  }
  return j.dump(2) + "\n";
}

}  // namespace orion::model
