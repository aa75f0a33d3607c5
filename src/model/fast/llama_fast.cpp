#include "model/fast/llama_fast.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/memory_limit.h"
#include "exec/cpu/vector_math.h"
#include "model/fast/fast_attention.h"
#include "model/fast/fast_rows.h"
#include "model/llama/rope.h"

namespace orion::model {

namespace {

std::vector<float> floats(const Tensor& t) {
  const auto v = t.contiguous().span<float>();
  return {v.begin(), v.end()};
}

// [out, in] matrices one under the other (all of `in` columns), as one f32 matrix.
Tensor stack_rows(const std::vector<const Tensor*>& parts) {
  std::int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->dim(0);
  const std::int64_t cols = parts.front()->dim(1);
  Tensor out(DType::f32, {rows, cols});
  float* dst = out.data<float>();
  for (const Tensor* t : parts) {
    const auto v = t->contiguous().span<float>();
    dst = std::copy(v.begin(), v.end(), dst);
  }
  return out;
}

}  // namespace

LlamaFastModel::LlamaFastModel(const LlamaModel& model, WeightDType dtype) : config_(model.config()), dtype_(dtype) {
  const auto& w = model.weights();
  auto get = [&](const std::string& name) -> const Tensor& {
    auto it = w.find(name);
    if (it == w.end()) throw Error("llama fast path: tensor " + name + " is missing");
    return it->second;
  };
  auto pack = [&](const Tensor& t) { return PackedLinear::pack(t, false, Tensor{}, dtype); };
  auto stacked = [&](std::vector<std::string> names) {
    std::vector<const Tensor*> parts;
    for (const auto& n : names) parts.push_back(&get(n));
    return pack(stack_rows(parts));
  };
  const Tensor& embed = get("model.embed_tokens.weight");
  if (config_.tie_word_embeddings) {
    head_ = pack(embed);
  } else {
    head_ = pack(get("lm_head.weight"));
    embed_ = floats(embed);
  }
  norm_ = floats(get("model.norm.weight"));
  for (std::int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LlamaFastLayer L;
    L.attn_norm = floats(get(p + "input_layernorm.weight"));
    L.mlp_norm = floats(get(p + "post_attention_layernorm.weight"));
    L.qkv = stacked({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"});
    L.o = pack(get(p + "self_attn.o_proj.weight"));
    L.gate_up = stacked({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"});
    L.down = pack(get(p + "mlp.down_proj.weight"));
    layers_.push_back(std::move(L));
  }
  const RopeTables t = rope_tables(config_.max_position_embeddings, config_.head_dim(), config_.rope_theta);
  cos_ = floats(t.cos);
  sin_ = floats(t.sin);
}

void LlamaFastModel::embed_row(std::int32_t token, float* out) const {
  const auto C = static_cast<std::size_t>(config_.hidden_size);
  if (config_.tie_word_embeddings) head_.row(token, out);
  else std::memcpy(out, embed_.data() + static_cast<std::size_t>(token) * C, C * sizeof(float));
}

std::size_t LlamaFastModel::weight_bytes_per_token() const {
  std::size_t b = head_.weight_bytes();
  for (const auto& L : layers_)
    b += L.qkv.weight_bytes() + L.o.weight_bytes() + L.gate_up.weight_bytes() + L.down.weight_bytes();
  return b;
}

std::size_t LlamaFastModel::packed_bytes() const {
  std::size_t b = head_.owned_bytes() + embed_.size() * sizeof(float);
  for (const auto& L : layers_) b += L.qkv.owned_bytes() + L.o.owned_bytes() + L.gate_up.owned_bytes() + L.down.owned_bytes();
  return b;
}

std::uint64_t LlamaFastModel::session_bytes() const {
  const auto& c = config_;
  const auto P = static_cast<std::uint64_t>(c.max_position_embeddings);
  const auto cache = 2 * static_cast<std::uint64_t>(c.num_hidden_layers) * P * static_cast<std::uint64_t>(c.kv_width());
  const auto acts = static_cast<std::uint64_t>(5 * c.hidden_size + 2 * c.kv_width() + 3 * c.intermediate_size +
                                               c.num_attention_heads * c.max_position_embeddings + c.vocab_size);
  return (cache + acts) * sizeof(float);
}

LlamaFastSession::LlamaFastSession(std::shared_ptr<const LlamaFastModel> model, int threads, exec::cpu::Isa isa)
    : model_(std::move(model)), pool_(threads), isa_(isa) {
  const auto& c = model_->config();
  const auto C = static_cast<std::size_t>(c.hidden_size), KVW = static_cast<std::size_t>(c.kv_width());
  const auto P = static_cast<std::size_t>(c.max_position_embeddings);
  check_fits_in_memory(model_->session_bytes(), "the key/value cache of the whole context (max_position_embeddings)",
                       "llama session");
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    k_cache_.push_back(make_large_array<float>(P * KVW));
    v_cache_.push_back(make_large_array<float>(P * KVW));
  }
  x_.resize(C);
  h_.resize(C);
  qkv_.resize(C + 2 * KVW);
  att_.resize(C);
  tmp_.resize(C);
  gate_up_.resize(2 * static_cast<std::size_t>(c.intermediate_size));
  scores_.resize(static_cast<std::size_t>(c.num_attention_heads) * P);
  logits_.resize(static_cast<std::size_t>(c.vocab_size));
}

std::vector<float> LlamaFastSession::prefill(std::span<const std::int32_t> tokens) {
  const auto& c = model_->config();
  check_decoder_tokens(tokens, position_, c.max_position_embeddings, c.vocab_size, "llama");
  if (static_cast<std::int64_t>(tokens.size()) >= batched_min_) {
    prefill_batched(tokens);
    return logits_;
  }
  // Prompt tokens but the last need no logits: the head (the largest matrix) is skipped.
  for (std::size_t i = 0; i < tokens.size(); ++i) step(tokens[i], i + 1 == tokens.size());
  return logits_;
}

void LlamaFastSession::step(std::int32_t token, bool want_logits) {
  const LlamaFastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t C = c.hidden_size, H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
  const std::int64_t KVW = c.kv_width(), F = c.intermediate_size, P = c.max_position_embeddings;
  const std::int64_t pos = position_;
  const auto n = static_cast<std::size_t>(C);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));

  m.embed_row(token, x_.data());
  const float* cos = m.cos_.data() + pos * D;
  const float* sin = m.sin_.data() + pos * D;

  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const LlamaFastLayer& L = m.layers_[l];
    rms_norm_row(x_.data(), L.attn_norm.data(), c.rms_norm_eps, h_.data(), n);
    L.qkv.apply(h_.data(), qkv_.data(), pool_, isa_);
    float* q = qkv_.data();
    float* k = q + C;
    for (std::int64_t h = 0; h < H; ++h) rotate_half_head(q + h * D, cos, sin, D);
    for (std::int64_t h = 0; h < KV; ++h) rotate_half_head(k + h * D, cos, sin, D);
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    cache_heads(k, kc, KV, P, D, pos);
    cache_heads(k + KVW, vc, KV, P, D, pos);
    attend_heads(q, kc, vc, H, KV, P, pos + 1, D, scale, scores_.data(), att_.data(), pool_);
    L.o.apply(att_.data(), tmp_.data(), pool_, isa_);
    for (std::size_t i = 0; i < n; ++i) x_[i] += tmp_[i];

    rms_norm_row(x_.data(), L.mlp_norm.data(), c.rms_norm_eps, h_.data(), n);
    L.gate_up.apply(h_.data(), gate_up_.data(), pool_, isa_);
    // The down projection's input overwrites the gates.
    float* g = gate_up_.data();
    exec::cpu::silu_mul_rows(g, g + F, F);
    L.down.apply(g, tmp_.data(), pool_, isa_);
    for (std::size_t i = 0; i < n; ++i) x_[i] += tmp_[i];
  }
  ++position_;
  if (!want_logits) return;
  rms_norm_row(x_.data(), m.norm_.data(), c.rms_norm_eps, h_.data(), n);
  m.head_.apply(h_.data(), logits_.data(), pool_, isa_);
}

}  // namespace orion::model
