#pragma once
// Small Llama models for tests (the fast engine's, llama_fast_test.cpp and llama_fast_prefill_test.cpp; the ANE package's, tests/runtime/llama_package_test.cpp),
// and config.json's errors as the config tests read them.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/random.h"
#include "model/llama/llama_model.h"

namespace orion::model::testing {

struct SmallLlama {
  std::int64_t layers, dim, heads, kv_heads, hidden, vocab;
  bool tied;
  std::int64_t positions;
};

inline LlamaConfig small_llama_config(const SmallLlama& s) {
  LlamaConfig c;
  c.num_hidden_layers = s.layers;
  c.hidden_size = s.dim;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.intermediate_size = s.hidden;
  c.vocab_size = s.vocab;
  c.tie_word_embeddings = s.tied;
  c.max_position_embeddings = s.positions;
  c.rms_norm_eps = 1e-5;
  c.eos_token_ids = {0};
  return c;
}

// `c` as a model of `family` (model/llama/llama_config.h): qwen2's q/k/v biases, qwen3's q/k
// norms and head_dim, gemma3_text's and qwen3_5_text's everything, llama with `bias` (q/k/v/o biases, and llama3 rope scaling so that every
// band of frequencies is used).
inline void make_family(LlamaConfig& c, const char* family, std::int64_t head_dim = 0, bool bias = false) {
  c.model_type = family;
  if (c.model_type == "gemma3_text") {
    // Gemma 3 through its config.json (the parser sets its switches): every other layer slides
    // over 5 positions with its own rope base, a query_pre_attn_scalar other than the head size,
    // linear rope scaling on the global layers.
    c.head_size = head_dim;
    c.sliding_window = 5;
    c.rope_local_theta = 10000;
    c.rope_theta = 1e6;
    c.query_pre_attn_scalar = 1.5 * static_cast<double>(c.head_dim());
    c.rope_scaling = {.type = RopeScaling::Type::linear, .factor = 8};
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) c.sliding_layers.push_back(l % 2 == 0);
    const std::int64_t cap = c.context_cap;
    c = parse_llama_config(llama_config_json(c), "gemma3 test config");
    c.context_cap = cap;
    return;
  }
  if (c.model_type == "qwen3_5_text") {
    // Qwen3.5 through its config.json: Gated DeltaNet layers (2 key heads read by 4 value heads
    // of 8) at the even indices, gated full layers with half of each head rotated between.
    c.head_size = head_dim;
    c.rope_theta = 1e6;
    c.partial_rotary_factor = 0.5;
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) c.linear_layers.push_back(l % 2 == 0);
    c.linear = {.key_heads = 2, .value_heads = 4, .key_head_dim = 8, .value_head_dim = 8, .conv_kernel = 4};
    const std::int64_t cap = c.context_cap;
    c = parse_llama_config(llama_config_json(c), "qwen3.5 test config");
    c.context_cap = cap;
    return;
  }
  c.head_size = head_dim;
  c.qkv_bias = c.model_type == "qwen2" || bias;
  c.o_bias = c.model_type != "qwen2" && bias;
  c.qk_norm = c.model_type == "qwen3";
  if (bias) {
    c.rope_scaling.type = RopeScaling::Type::llama3;
    c.rope_scaling.factor = 4;
    c.rope_scaling.original_max_position_embeddings = 16;
  }
}

// The error parse_llama_config gives `json` as "dir/config.json"; "" when it reads.
inline std::string llama_config_error(const std::string& json) {
  try {
    parse_llama_config(json, "dir/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Weights far larger than init's 0.02 and norm gains away from 1, so that activations are of
// order 1 and every nonlinearity and gain matters to the logits (0.2, not GPT-2's test's 0.25:
// with SwiGLU's products q8's activation error reached 9.6e-2 there, too near kQ8ActivationTol).
inline TensorMap llama_large_weights(const LlamaConfig& c) {
  TensorMap w = llama_init_weights(c, 11);
  Rng rng(12);
  for (auto& [name, t] : w) rng.fill_normal(t.span<float>(), t.rank() == 2 ? 0.0f : 1.0f, 0.2f);
  return w;
}

}  // namespace orion::model::testing
