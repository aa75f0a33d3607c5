#include "engine/fast/gpt2_fast.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "engine/fast/fast_attention.h"
#include "engine/fast/fast_rows.h"

namespace orion::engine {

namespace {

model::WeightDType own_dtype(const model::Gpt2Model& model) {
  return model.stored() ? model.stored()->format().dtype : model::WeightDType::f32;
}

}  // namespace

Gpt2FastModel::Gpt2FastModel(const model::Gpt2Model& model) : Gpt2FastModel(model, own_dtype(model)) {}

Gpt2FastModel::Gpt2FastModel(const model::Gpt2Model& model, model::WeightDType dtype) : FastModel(model.config(), dtype) {
  const model::StoredWeights* stored = model.stored();
  const bool borrow = stored && stored->format().dtype == dtype;
  // Only asked for when packing: for a converted folder this dequantises the whole model.
  auto get = [&](const std::string& name) -> const Tensor& { return fast_weight(model.weights(), name, "gpt2"); };
  auto vec = [&](const std::string& name) { return float_values(stored ? stored->vector(name) : get(name)); };
  auto linear = [&](const std::string& name, const std::string& bias) {
    if (borrow) {
      const model::StoredMatrix& m = stored->matrix(name);
      return PackedLinear::borrow(m.w, m.scales, bias.empty() ? Tensor{} : stored->vector(bias), dtype);
    }
    return PackedLinear::pack(get(name), model::gpt2_is_conv1d(name), bias.empty() ? Tensor{} : get(bias), dtype);
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

std::uint64_t Gpt2FastModel::session_bytes() const {
  const auto& c = config_;
  const auto acts = static_cast<std::uint64_t>(8 * c.n_embd + c.hidden() + c.vocab_size + c.n_head * c.n_positions);
  return c.kv_cache_bytes() + acts * sizeof(float);
}

namespace {

FastSessionShape gpt2_session_shape(const Gpt2FastModel& m) {
  const model::Gpt2Config& c = m.config();
  return {.arch = "gpt2", .context_key = "n_positions", .reserved_bytes = c.kv_cache_bytes(),
          .layers = c.n_layer, .positions = c.n_positions, .vocab = c.vocab_size, .heads = c.n_head,
          .width = c.n_embd, .kv_width = c.n_embd, .qkv_width = 3 * c.n_embd, .mlp_width = c.hidden(),
          .dtype = m.dtype(), .head = &m.head(), .matrices = m.layer_matrices()};
}

}  // namespace

Gpt2FastSession::Gpt2FastSession(std::shared_ptr<const Gpt2FastModel> model, int threads, exec::cpu::Isa isa)
    : FastSession(gpt2_session_shape(*model), threads, isa), model_(std::move(model)) {}

void Gpt2FastSession::final_norm(const float* x, float* y) const {
  const Gpt2FastModel& m = *model_;
  layer_norm_row(x, m.lnf_g_.data(), m.lnf_b_.data(), static_cast<float>(m.config().layer_norm_epsilon), y,
                 static_cast<std::size_t>(m.config().n_embd));
}

void Gpt2FastSession::embed(std::int32_t token, std::int64_t position, float* x) const {
  const Gpt2FastModel& m = *model_;
  const std::int64_t C = m.config().n_embd;
  m.head_.row(token, x);
  const float* p = m.wpe_.data() + position * C;
  for (std::int64_t i = 0; i < C; ++i) x[i] += p[i];
}

void Gpt2FastSession::step_layers() {
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const auto C = static_cast<std::size_t>(c.n_embd), H = static_cast<std::size_t>(c.n_head), D = C / H;
  const auto pos = static_cast<std::size_t>(position_);
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));

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
}

}  // namespace orion::engine
