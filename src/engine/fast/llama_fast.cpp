#include "engine/fast/llama_fast.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "exec/cpu/vector_math.h"
#include "engine/fast/fast_attention.h"
#include "engine/fast/fast_rows.h"
#include "model/llama/rope.h"

namespace orion::engine {

namespace {

// [out, in] matrices one under the other (all of `in` columns), or [out] biases one after the
// other, as one f32 tensor.
Tensor stack_rows(const std::vector<const Tensor*>& parts) {
  std::int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->dim(0);
  Shape shape = parts.front()->shape();
  shape[0] = rows;
  Tensor out(DType::f32, shape);
  float* dst = out.data<float>();
  for (const Tensor* t : parts) {
    const auto v = t->contiguous().span<float>();
    dst = std::copy(v.begin(), v.end(), dst);
  }
  return out;
}

// MLX 4-bit matrices of one format one under the other (their rows concatenated), as one; nullopt
// unless every part is stored 4-bit in the same groups.
std::optional<model::QuantizedMatrix> stack_quantized(const model::QuantizedMatrices& stored,
                                                      const std::vector<std::string>& names) {
  std::vector<const model::QuantizedMatrix*> parts;
  for (const auto& n : names) {
    auto it = stored.find(n);
    if (it == stored.end() || it->second.format.bits != 4 || it->second.format != stored.at(names.front()).format)
      return std::nullopt;
    parts.push_back(&it->second);
  }
  auto cat = [&](auto member) {
    std::vector<Tensor> ts;
    for (const auto* p : parts) ts.push_back((p->*member).contiguous());
    Shape shape = ts.front().shape();
    shape[0] = 0;
    for (const Tensor& t : ts) shape[0] += t.dim(0);
    Tensor out(ts.front().dtype(), shape);
    auto* dst = out.raw();
    for (const Tensor& t : ts) dst = std::copy_n(t.raw(), t.nbytes(), dst);
    return out;
  };
  return model::QuantizedMatrix{cat(&model::QuantizedMatrix::words), cat(&model::QuantizedMatrix::scales),
                                cat(&model::QuantizedMatrix::biases), parts.front()->format};
}

}  // namespace

LlamaFastModel::LlamaFastModel(const model::LlamaModel& model, model::WeightDType dtype)
    : LlamaFastModel(model, dtype, {0, model.config().num_hidden_layers}) {}

LlamaFastModel::LlamaFastModel(const model::LlamaModel& model, model::WeightDType dtype, LayerRange range)
    : FastModel(model.config(), dtype), range_(range) {
  if (range.first < 0 || range.last > config_.num_hidden_layers || range.first >= range.last)
    throw Error("layers [" + std::to_string(range.first) + ", " + std::to_string(range.last) + ") are not a range of the " +
                std::to_string(config_.num_hidden_layers) + " layers of " + model.dir());
  // One param at a time (LlamaModel::weight): an MLX folder's matrices are dequantized one by
  // one where they are packed in another format, never all at once.
  auto get = [&](const std::string& name) { return model.weight(name); };
  // q4 takes an MLX folder's 4-bit matrices as they are stored; any other matrix is packed from
  // the f32 weights (a quantized one dequantized).
  const model::QuantizedMatrices& stored = model.quantized();
  auto stacked = [&](const std::vector<std::string>& names, const char* suffix) {
    std::vector<Tensor> parts;
    for (const auto& n : names) parts.push_back(get(n + suffix));
    if (parts.size() == 1) return parts.front();
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : parts) ptrs.push_back(&t);
    return stack_rows(ptrs);
  };
  auto pack_named = [&](const std::vector<std::string>& names, bool bias = false) {
    Tensor b = bias ? stacked(names, ".bias") : Tensor{};
    if (dtype == model::WeightDType::q4) {
      std::vector<std::string> weight_names;
      for (const auto& n : names) weight_names.push_back(n + ".weight");
      if (auto q = stack_quantized(stored, weight_names)) return PackedLinear::from_quantized(*q, std::move(b));
    }
    return PackedLinear::pack(stacked(names, ".weight"), false, b, dtype);
  };
  if (config_.tie_word_embeddings) {
    if (embeds() || has_head()) head_ = pack_named({"model.embed_tokens"});
  } else {
    if (has_head()) head_ = pack_named({"lm_head"});
    if (embeds()) embed_ = float_values(get("model.embed_tokens.weight"));
  }
  auto gain = [&](const std::string& name) {  // Gemma's 1 + w folded in
    std::vector<float> g = float_values(get(name));
    if (config_.norm_plus_one)
      for (float& v : g) v += 1.0f;
    return g;
  };
  if (has_head()) norm_ = gain("model.norm.weight");
  for (std::int64_t l = range.first; l < range.last; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LlamaFastLayer L;
    L.sliding = config_.sliding_layer(l);
    L.attn_norm = gain(p + "input_layernorm.weight");
    if (config_.sandwich_norms) {
      L.attn_out_norm = gain(p + "post_attention_layernorm.weight");
      L.mlp_norm = gain(p + "pre_feedforward_layernorm.weight");
      L.mlp_out_norm = gain(p + "post_feedforward_layernorm.weight");
    } else {
      L.mlp_norm = gain(p + "post_attention_layernorm.weight");
    }
    if (config_.linear_layer(l)) {
      const std::string a = p + "linear_attn.";
      L.qkv = pack_named({a + "in_proj_qkv", a + "in_proj_z", a + "in_proj_b", a + "in_proj_a"});
      L.o = pack_named({a + "out_proj"});
      L.delta.emplace(model, l);
    } else if (config_.attn_output_gate) {
      // q_proj's rows are [query | gate] per head: the queries first, then k, v and the gates.
      const Tensor qg = get(p + "self_attn.q_proj.weight").contiguous();
      const std::int64_t D = config_.head_dim(), cols = config_.hidden_size;
      Tensor q(DType::f32, {config_.q_width(), cols}), gates(DType::f32, {config_.q_width(), cols});
      for (std::int64_t h = 0; h < config_.num_attention_heads; ++h) {
        const float* src = qg.data<float>() + 2 * h * D * cols;
        std::copy_n(src, D * cols, q.data<float>() + h * D * cols);
        std::copy_n(src + D * cols, D * cols, gates.data<float>() + h * D * cols);
      }
      const Tensor k = get(p + "self_attn.k_proj.weight"), v = get(p + "self_attn.v_proj.weight");
      if (config_.qkv_bias) throw Error(model.dir() + ": gated queries with q/k/v biases are not a model Orion knows");
      L.qkv = PackedLinear::pack(stack_rows({&q, &k, &v, &gates}), false, Tensor{}, dtype);
      L.o = pack_named({p + "self_attn.o_proj"}, config_.o_bias);
    } else {
      L.qkv = pack_named({p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}, config_.qkv_bias);
      L.o = pack_named({p + "self_attn.o_proj"}, config_.o_bias);
    }
    L.gate_up = pack_named({p + "mlp.gate_proj", p + "mlp.up_proj"});
    L.down = pack_named({p + "mlp.down_proj"});
    if (config_.qk_norm && !L.delta) {
      L.q_norm = gain(p + "self_attn.q_norm.weight");
      L.k_norm = gain(p + "self_attn.k_norm.weight");
    }
    layers_.push_back(std::move(L));
  }
  const model::RopeTables t = model::rope_tables(config_);
  cos_ = float_values(t.cos);
  sin_ = float_values(t.sin);
  if (model::has_local_rope(config_)) {
    const model::RopeTables local = model::rope_tables(config_, true);
    cos_local_ = float_values(local.cos);
    sin_local_ = float_values(local.sin);
  }
}

float LlamaFastModel::attention_scale() const {
  return static_cast<float>(config_.query_prescale() / std::sqrt(static_cast<double>(config_.head_dim())));
}

void LlamaFastModel::add_output(const std::vector<float>& out_norm, float* x, float* y) const {
  const auto n = static_cast<std::size_t>(config_.hidden_size);
  if (!out_norm.empty()) rms_norm_row(x, out_norm.data(), config_.rms_norm_eps, x, n);
  for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}

void LlamaFastModel::glu_row(float* g) const {
  const std::int64_t F = config_.intermediate_size;
  if (!config_.gelu_mlp) return exec::cpu::silu_mul_rows(g, g + F, F);
  exec::cpu::gelu_tanh_rows(g, F);
  for (std::int64_t i = 0; i < F; ++i) g[i] *= g[F + i];
}

void LlamaFastModel::norm_and_rotate(const LlamaFastLayer& L, float* qk, std::int64_t position) const {
  const std::int64_t H = config_.num_attention_heads, KV = config_.num_key_value_heads, D = config_.head_dim();
  const auto d = static_cast<std::size_t>(D);
  if (config_.qk_norm) {
    for (std::int64_t h = 0; h < H; ++h) rms_norm_row(qk + h * D, L.q_norm.data(), config_.rms_norm_eps, qk + h * D, d);
    for (std::int64_t h = H; h < H + KV; ++h) rms_norm_row(qk + h * D, L.k_norm.data(), config_.rms_norm_eps, qk + h * D, d);
  }
  const bool local = L.sliding && !cos_local_.empty();
  const float* cos = (local ? cos_local_ : cos_).data() + position * D;
  const float* sin = (local ? sin_local_ : sin_).data() + position * D;
  // q's heads, then k's; the first rotary_dim() dims of each (all but Qwen3.5's).
  for (std::int64_t h = 0; h < H + KV; ++h) rotate_half_head(qk + h * D, cos, sin, config_.rotary_dim());
}

void LlamaFastModel::gate_attention(float* att, const float* gates) const {
  if (!config_.attn_output_gate) return;
  for (std::int64_t i = 0; i < config_.q_width(); ++i) att[i] /= 1.0f + std::exp(-gates[i]);
}

std::vector<std::optional<FastDeltaState>> LlamaFastModel::new_delta_states() const {
  std::vector<std::optional<FastDeltaState>> out(layers_.size());
  for (std::size_t l = 0; l < layers_.size(); ++l)
    if (layers_[l].delta) out[l].emplace(layers_[l].delta->shape);
  return out;
}

void LlamaFastModel::embed_row(std::int32_t token, float* out) const {
  const auto C = static_cast<std::size_t>(config_.hidden_size);
  if (config_.tie_word_embeddings) head_.row(token, out);
  else std::memcpy(out, embed_.data() + static_cast<std::size_t>(token) * C, C * sizeof(float));
  if (config_.embed_scale != 1.0)
    for (std::size_t i = 0; i < C; ++i) out[i] *= static_cast<float>(config_.embed_scale);
}

std::uint64_t LlamaFastModel::session_bytes() const {
  const auto& c = config_;
  const auto P = static_cast<std::uint64_t>(c.context());
  const auto cache = 2 * static_cast<std::uint64_t>(layers_.size()) * P * static_cast<std::uint64_t>(c.kv_width());
  const auto acts = static_cast<std::uint64_t>(4 * c.hidden_size + 3 * c.q_width() + 2 * c.kv_width() +
                                               3 * c.intermediate_size + c.num_attention_heads * c.context() + c.vocab_size);
  std::uint64_t states = 0;
  for (const LlamaFastLayer& L : layers_)
    if (L.delta) {
      const model::LinearAttention& la = L.delta->shape;
      states += static_cast<std::uint64_t>((la.conv_kernel - 1) * la.conv_width() + la.value_heads * la.key_head_dim * la.value_head_dim +
                                           la.conv_width() + la.value_width() + 2 * la.value_heads);
    }
  return (cache + acts + states) * sizeof(float);
}

namespace {

FastSessionShape llama_session_shape(const LlamaFastModel& m) {
  const model::LlamaConfig& c = m.config();
  // The widest of the layers' kinds: a Gated DeltaNet layer's projection and output may be wider.
  std::int64_t qkv = m.qkv_width(), att = c.q_width();
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l)
    if (c.linear_layer(l)) {
      qkv = std::max(qkv, c.linear.conv_width() + c.linear.value_width() + 2 * c.linear.value_heads);
      att = std::max(att, c.linear.value_width());
    }
  return {.arch = c.model_type.c_str(), .context_key = "max_position_embeddings", .reserved_bytes = m.session_bytes(),
          .layers = static_cast<std::int64_t>(m.layer_matrices().size() / 4), .positions = c.context(), .vocab = c.vocab_size,
          .heads = c.num_attention_heads, .width = c.hidden_size, .kv_width = c.kv_width(),
          .qkv_width = qkv, .att_width = att,
          .mlp_width = 2 * c.intermediate_size,  // gate over up
          .recurrent = !c.linear_layers.empty(),
          .dtype = m.dtype(), .head = m.has_head() ? &m.head() : nullptr, .matrices = m.layer_matrices()};
}

}  // namespace

LlamaFastSession::LlamaFastSession(std::shared_ptr<const LlamaFastModel> model, int threads, exec::cpu::Isa isa)
    : FastSession(llama_session_shape(*model), threads, isa), model_(std::move(model)), delta_(model_->new_delta_states()) {}

ParallelRange LlamaFastSession::pool_heads() {
  return [this](std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& fn) { pool_.parallel_for(0, count, 1, fn); };
}

FastDeltaState& LlamaFastSession::delta_state(std::size_t l, std::int64_t position) {
  FastDeltaState& s = *delta_[l];
  if (position == 0) s.zero();
  return s;
}

void LlamaFastSession::final_norm(const float* x, float* y) const {
  const LlamaFastModel& m = *model_;
  rms_norm_row(x, m.norm_.data(), m.config().rms_norm_eps, y, static_cast<std::size_t>(m.config().hidden_size));
}

void LlamaFastSession::embed(std::int32_t token, std::int64_t, float* x) const { model_->embed_row(token, x); }

void LlamaFastSession::step_layers() {
  const LlamaFastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t pos = position_;
  const auto n = static_cast<std::size_t>(c.hidden_size);
  const ParallelRange heads = pool_heads();
  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const LlamaFastLayer& L = m.layers_[l];
    rms_norm_row(x_.data(), L.attn_norm.data(), c.rms_norm_eps, h_.data(), n);
    L.qkv.apply(h_.data(), qkv_.data(), pool_, isa_);
    if (L.delta) {
      delta_token(*L.delta, qkv_.data(), delta_state(l, pos), att_.data(), heads);
    } else {
      attend_step(L, l);
    }
    L.o.apply(att_.data(), tmp_.data(), pool_, isa_);
    m.add_output(L.attn_out_norm, tmp_.data(), x_.data());

    rms_norm_row(x_.data(), L.mlp_norm.data(), c.rms_norm_eps, h_.data(), n);
    L.gate_up.apply(h_.data(), mlp_.data(), pool_, isa_);
    // The down projection's input overwrites the gates.
    float* g = mlp_.data();
    m.glu_row(g);
    L.down.apply(g, tmp_.data(), pool_, isa_);
    m.add_output(L.mlp_out_norm, tmp_.data(), x_.data());
  }
}

// A full layer's attention of the token whose q, k and v are in qkv_: its key and value cached,
// the output (gated, with Qwen3.5's gates) in att_.
void LlamaFastSession::attend_step(const LlamaFastLayer& L, std::size_t l) {
  const LlamaFastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
  const std::int64_t KVW = c.kv_width(), P = c.context();
  const std::int64_t pos = position_;
  const float scale = m.attention_scale();
  {
    float* q = qkv_.data();
    float* k = q + c.q_width();
    m.norm_and_rotate(L, q, pos);
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    cache_heads(k, kc, KV, P, D, pos);
    cache_heads(k + KVW, vc, KV, P, D, pos);
    // A sliding layer's keys start at its window: the cache's runs from there, shorter.
    const std::int64_t first = m.first_key(L, pos);
    attend_heads(q, kc + first * D, vc + first * D, H, KV, P, pos + 1 - first, D, scale, scores_.data(), att_.data(), pool_);
    m.gate_attention(att_.data(), q + c.q_width() + 2 * KVW);
  }
}

}  // namespace orion::engine
