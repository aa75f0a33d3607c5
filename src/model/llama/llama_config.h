#pragma once
// A Llama-family model's hyperparameters, as Hugging Face's configs spell them in config.json:
// one struct for the four families that share Llama's decoder (pre-norm RMSNorm blocks,
// rotary embeddings, grouped-query attention, SwiGLU) and differ in a few switches:
//   llama   (Llama 2/3, TinyLlama, SmolLM2): optional attention_bias (q, k, v and o), rope
//           scaling "linear" or "llama3";
//   mistral as llama, plus sliding_window;
//   qwen2   biases on q, k and v (not o); sliding window only when use_sliding_window;
//   qwen3   per-head RMSNorm on queries and keys before the rotation (q_norm, k_norm), an
//           explicit head_dim that need not be hidden_size / num_attention_heads;
//   gemma3_text (Gemma 3) qwen3's q/k norms, plus: every RMSNorm scales by (1 + weight), the
//           attention's and the MLP's outputs normed before their residual adds ("sandwich"),
//           GeGLU (tanh-approximated gelu), the embedding scaled by sqrt(hidden_size), the
//           attention scaled by query_pre_attn_scalar^-1/2, and sliding-window layers
//           interleaved with global ones (layer_types), with their own rope base;
//   qwen3_5_text (Qwen3.5's language model) qwen3's q/k norms and Gemma's (1 + w) norms, plus:
//           layers of Gated DeltaNet linear attention (model/llama/gated_delta.h) interleaved
//           with full ones (layer_types), the full layers' queries gated (q_proj gives each head
//           a query and a gate; the attention's output times sigmoid(gate)), and rotary
//           embeddings on part of each head (partial_rotary_factor).
// Read once per model: the one source of its shape. Absent optional keys take the Hugging Face
// config class's defaults; keys that would change the maths in a way Orion does not implement
// are refused by name (read_llama_config), never ignored.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/formats/mlx_quantization.h"

namespace orion::model {

// The Llama-family model_type values Orion reads, in the order docs list them.
inline constexpr std::string_view kLlamaFamilies[] = {"llama", "mistral", "qwen2", "qwen3", "gemma3_text", "qwen3_5_text"};
bool is_llama_family(std::string_view model_type);
// "llama, mistral, ...": the families for messages that list them.
std::string llama_family_list();

// rope_scaling: how the rotary frequencies are stretched for a longer context.
struct RopeScaling {
  enum class Type : std::uint8_t { none, linear, llama3 };
  Type type = Type::none;
  double factor = 1.0;
  // llama3 only: the wavelength band in which frequencies are blended.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

// Qwen3.5's Gated DeltaNet layers' shape (Hugging Face's linear_* keys): q and k of key_heads
// heads of key_head_dim, v of value_heads heads of value_head_dim, and the causal convolution's
// kernel over the q, k and v channels.
struct LinearAttention {
  std::int64_t key_heads = 16;
  std::int64_t value_heads = 32;
  std::int64_t key_head_dim = 128;
  std::int64_t value_head_dim = 128;
  std::int64_t conv_kernel = 4;

  std::int64_t key_width() const { return key_heads * key_head_dim; }
  std::int64_t value_width() const { return value_heads * value_head_dim; }
  // The convolved channels: q, k and v side by side.
  std::int64_t conv_width() const { return 2 * key_width() + value_width(); }
  bool operator==(const LinearAttention&) const = default;
};

// Orion keeps a KV cache for the whole context it runs, so a model whose config allows more
// positions than this runs with this many (docs/MODELS.md) unless asked for more
// (LlamaConfig::context_cap: a device package's --context).
inline constexpr std::int64_t kMaxLlamaContext = 4096;

struct LlamaConfig {
  std::string model_type = "llama";
  std::int64_t hidden_size = 4096;
  std::int64_t intermediate_size = 11008;
  std::int64_t num_hidden_layers = 32;
  std::int64_t num_attention_heads = 32;
  std::int64_t num_key_value_heads = 32;  // absent: num_attention_heads (no grouping)
  std::int64_t head_size = 0;             // config's head_dim; 0: hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  std::int64_t max_position_embeddings = 2048;
  // Attention reaches this many positions (the query's own included) in the layers it applies
  // to: every layer (Mistral, Qwen2's option: the context is capped to it), or those of
  // sliding_layers (Gemma 3).
  std::optional<std::int64_t> sliding_window;
  std::vector<bool> sliding_layers;  // per layer: a sliding-window layer; empty: as sliding_window says
  double rope_local_theta = 0;       // the sliding layers' rope base (Gemma 3's rope_local_base_freq); 0: rope_theta
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // q_proj, k_proj and v_proj have biases
  bool o_bias = false;    // o_proj has a bias
  bool qk_norm = false;   // q_norm and k_norm, per head, before the rotation
  // Gemma 3's switches (the family comment above).
  bool norm_plus_one = false;   // RMSNorm scales by (1 + weight)
  bool sandwich_norms = false;  // post_attention_layernorm on the attention's output; pre_/post_feedforward_layernorm
  bool gelu_mlp = false;        // the feed-forward gate is gelu (tanh form), not silu
  double embed_scale = 1.0;     // the embedding's rows times this (sqrt(hidden_size) for Gemma)
  double query_pre_attn_scalar = 0;  // attention scale is its -1/2 power; 0: head_dim's
  // Qwen3.5's switches (the family comment above).
  std::vector<bool> linear_layers;  // per layer: Gated DeltaNet; empty: every layer is attention
  LinearAttention linear;           // their shape, when linear_layers has any
  bool attn_output_gate = false;    // q_proj gives [query | gate] per head
  double partial_rotary_factor = 1.0;  // the rotated share of each head's dims
  std::int64_t vocab_size = 32000;
  std::optional<std::int64_t> bos_token_id = 1;  // null: texts start without one
  std::vector<std::int64_t> eos_token_ids = {2};  // generation stops at any; the first ends a text
  std::string torch_dtype = "float32";  // what the checkpoint stores; Orion computes in f32 whatever it is
  // How an MLX quantized folder stores its matrices (config.json's "quantization"); not written
  // back by llama_config_json, whose weights are floats.
  std::optional<MlxQuantization> quantization;
  // The weights are a multimodal folder's text model (Qwen3.5's published qwen3_5 folders):
  // "model.language_model.*" for "model.*", the vision tower and the multi-token-prediction
  // head beside them unread. Not in the text config's json.
  bool multimodal_checkpoint = false;
  // The most positions Orion runs, whatever the config allows; not in config.json.
  std::int64_t context_cap = kMaxLlamaContext;

  std::int64_t head_dim() const { return head_size > 0 ? head_size : hidden_size / num_attention_heads; }
  // Columns of the queries (and of the attention's output): num_attention_heads * head_dim.
  std::int64_t q_width() const { return num_attention_heads * head_dim(); }
  // Columns of one layer's keys (and values): num_key_value_heads * head_dim.
  std::int64_t kv_width() const { return num_key_value_heads * head_dim(); }
  std::int64_t eos_token_id() const { return eos_token_ids.front(); }
  // Whether layer `l` attends over sliding_window positions only (without capping the context).
  bool sliding_layer(std::int64_t l) const {
    return !sliding_layers.empty() && sliding_layers[static_cast<std::size_t>(l)];
  }
  // Whether layer `l` is a Gated DeltaNet layer (a recurrent state, no KV cache).
  bool linear_layer(std::int64_t l) const {
    return !linear_layers.empty() && linear_layers[static_cast<std::size_t>(l)];
  }
  // The dims of each head rotary embeddings rotate (the first ones): all of them but with a
  // partial_rotary_factor below 1.
  std::int64_t rotary_dim() const;
  // The factor queries are multiplied by before attention's 1/sqrt(head_dim): 1 but for a
  // query_pre_attn_scalar other than head_dim.
  double query_prescale() const;
  // The positions Orion runs: max_position_embeddings, at most the sliding window (inside it
  // sliding-window attention is full attention) and context_cap.
  std::int64_t context() const;
  // Throws orion::Error naming `source` and the first inconsistent field.
  void validate(const std::string& source) const;
  std::int64_t parameter_count() const;
};

// The Llama-shaped model Orion's ANE training results are quoted on (llama2.c's stories110M):
// its layers, width, heads (no grouping), feed-forward width, context and vocabulary, with
// LlamaConfig's other defaults (untied head). The one definition `orion init --preset
// stories110m` and `orion bench train --arch stories110m` share.
LlamaConfig stories110m_config();

// Reads a Hugging Face config.json of a Llama-family model_type. Errors name the file and the
// key; what Orion does not implement (another rope_scaling type, mlp_bias, a hidden_act other
// than silu, Qwen2's per-layer sliding window below max_window_layers, ...) is refused by name.
LlamaConfig read_llama_config(const std::string& path);
LlamaConfig parse_llama_config(std::string_view json_text, const std::string& source);
// The same from a config already parsed (load_any_model reads model_type from it first).
LlamaConfig llama_config_from_json(const nlohmann::json& j, const std::string& source);
// The config.json text for `c`: the keys Hugging Face writes for c.model_type.
std::string llama_config_json(const LlamaConfig& c);

}  // namespace orion::model
