#include "model/fast/gpt2_fast.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/memory_limit.h"
#include "model/fast/fast_attention.h"
#include "model/fast/fast_rows.h"

namespace orion::model {

namespace {

std::vector<float> floats(const Tensor& t) {
  const auto v = t.contiguous().span<float>();
  return {v.begin(), v.end()};
}

WeightDType own_dtype(const Gpt2Model& model) {
  return model.stored() ? model.stored()->format().dtype : WeightDType::f32;
}

}  // namespace

Gpt2FastModel::Gpt2FastModel(const Gpt2Model& model) : Gpt2FastModel(model, own_dtype(model)) {}

Gpt2FastModel::Gpt2FastModel(const Gpt2Model& model, WeightDType dtype)
    : config_(model.config()), dtype_(dtype) {
  const StoredWeights* stored = model.stored();
  const bool borrow = stored && stored->format().dtype == dtype;
  // Only asked for when packing: for a converted folder this dequantises the whole model.
  auto get = [&](const std::string& name) -> const Tensor& {
    const auto& w = model.weights();
    auto it = w.find(name);
    if (it == w.end()) throw Error("gpt2 fast path: tensor " + name + " is missing");
    return it->second;
  };
  auto vec = [&](const std::string& name) { return floats(stored ? stored->vector(name) : get(name)); };
  auto linear = [&](const std::string& name, const std::string& bias) {
    if (borrow) {
      const StoredMatrix& m = stored->matrix(name);
      return PackedLinear::borrow(m.w, m.scales, bias.empty() ? Tensor{} : stored->vector(bias), dtype);
    }
    return PackedLinear::pack(get(name), gpt2_is_conv1d(name), bias.empty() ? Tensor{} : get(bias), dtype);
  };
  wpe_ = vec("wpe.weight");
  head_ = linear("wte.weight", "");
  lnf_g_ = vec("ln_f.weight");
  lnf_b_ = vec("ln_f.bias");
  for (std::int64_t l = 0; l < config_.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    Gpt2FastLayer L;
    L.ln1_g = vec(p + "ln_1.weight");
    L.ln1_b = vec(p + "ln_1.bias");
    L.ln2_g = vec(p + "ln_2.weight");
    L.ln2_b = vec(p + "ln_2.bias");
    L.attn = linear(p + "attn.c_attn.weight", p + "attn.c_attn.bias");
    L.proj = linear(p + "attn.c_proj.weight", p + "attn.c_proj.bias");
    L.fc = linear(p + "mlp.c_fc.weight", p + "mlp.c_fc.bias");
    L.mlp_proj = linear(p + "mlp.c_proj.weight", p + "mlp.c_proj.bias");
    layers_.push_back(std::move(L));
  }
}

std::size_t Gpt2FastModel::weight_bytes_per_token() const {
  std::size_t b = head_.weight_bytes();
  for (const auto& L : layers_)
    b += L.attn.weight_bytes() + L.proj.weight_bytes() + L.fc.weight_bytes() + L.mlp_proj.weight_bytes();
  return b;
}

std::size_t Gpt2FastModel::packed_bytes() const {
  std::size_t b = head_.owned_bytes();
  for (const auto& L : layers_) b += L.attn.owned_bytes() + L.proj.owned_bytes() + L.fc.owned_bytes() + L.mlp_proj.owned_bytes();
  return b;
}

std::uint64_t Gpt2FastModel::session_bytes() const {
  const auto& c = config_;
  const auto acts = static_cast<std::uint64_t>(8 * c.n_embd + c.hidden() + c.vocab_size + c.n_head * c.n_positions);
  return c.kv_cache_bytes() + acts * sizeof(float);
}

Gpt2FastSession::Gpt2FastSession(std::shared_ptr<const Gpt2FastModel> model, int threads, exec::cpu::Isa isa)
    : model_(std::move(model)), pool_(threads), isa_(isa) {
  const auto& c = model_->config();
  const auto C = static_cast<std::size_t>(c.n_embd), P = static_cast<std::size_t>(c.n_positions);
  check_fits_in_memory(c.kv_cache_bytes(), "the key/value cache of the whole context (n_positions)", "gpt2 session");
  for (std::int64_t l = 0; l < c.n_layer; ++l) {
    k_cache_.push_back(make_large_array<float>(P * C));
    v_cache_.push_back(make_large_array<float>(P * C));
  }
  x_.resize(C);
  h_.resize(C);
  qkv_.resize(3 * C);
  att_.resize(C);
  tmp_.resize(C);
  mlp_.resize(static_cast<std::size_t>(c.hidden()));
  scores_.resize(static_cast<std::size_t>(c.n_head) * P);
  logits_.resize(static_cast<std::size_t>(c.vocab_size));
}

std::vector<float> Gpt2FastSession::prefill(std::span<const std::int32_t> tokens) {
  const auto& c = model_->config();
  check_decoder_tokens(tokens, position_, c.n_positions, c.vocab_size, "gpt2");
  if (static_cast<std::int64_t>(tokens.size()) >= batched_min_) {
    prefill_batched(tokens);
    return logits_;
  }
  // Prompt tokens but the last need no logits: the head (the largest matrix) is skipped.
  for (std::size_t i = 0; i < tokens.size(); ++i) step(tokens[i], i + 1 == tokens.size());
  return logits_;
}

void Gpt2FastSession::step(std::int32_t token, bool want_logits) {
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const auto C = static_cast<std::size_t>(c.n_embd), H = static_cast<std::size_t>(c.n_head), D = C / H;
  const auto pos = static_cast<std::size_t>(position_);
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));

  m.head_.row(token, x_.data());
  for (std::size_t i = 0; i < C; ++i) x_[i] += m.wpe_[pos * C + i];

  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const Gpt2FastLayer& L = m.layers_[l];
    layer_norm_row(x_.data(), L.ln1_g.data(), L.ln1_b.data(), eps, h_.data(), C);
    L.attn.apply(h_.data(), qkv_.data(), pool_, isa_);
    const auto P = static_cast<std::int64_t>(c.n_positions);
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    const auto heads = static_cast<std::int64_t>(H), d = static_cast<std::int64_t>(D), p = static_cast<std::int64_t>(pos);
    cache_heads(qkv_.data() + C, kc, heads, P, d, p);
    cache_heads(qkv_.data() + 2 * C, vc, heads, P, d, p);
    attend_heads(qkv_.data(), kc, vc, heads, heads, P, p + 1, d, scale, scores_.data(), att_.data(), pool_);
    L.proj.apply(att_.data(), tmp_.data(), pool_, isa_);
    for (std::size_t i = 0; i < C; ++i) x_[i] += tmp_[i];
    layer_norm_row(x_.data(), L.ln2_g.data(), L.ln2_b.data(), eps, h_.data(), C);
    L.fc.apply(h_.data(), mlp_.data(), pool_, isa_, exec::cpu::Activation::gelu);
    L.mlp_proj.apply(mlp_.data(), tmp_.data(), pool_, isa_);
    for (std::size_t i = 0; i < C; ++i) x_[i] += tmp_[i];
  }
  ++position_;
  if (!want_logits) return;
  layer_norm_row(x_.data(), m.lnf_g_.data(), m.lnf_b_.data(), eps, h_.data(), C);
  m.head_.apply(h_.data(), logits_.data(), pool_, isa_);
}

}  // namespace orion::model
