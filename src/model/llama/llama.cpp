#include "model/llama/llama.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ir/builder.h"
#include "model/attention.h"
#include "model/gpt2/gpt2_block.h"
#include "model/llama/gated_delta.h"
#include "model/llama/rope.h"

namespace orion::model {

namespace {

using ir::Builder;
using ir::Value;

// nn.Linear: y = x W^T (+ bias), W stored [out, in].
Value linear(Builder& b, Value x, const std::string& name, std::int64_t in, std::int64_t out, bool bias = false) {
  Value y = b.matmul(x, b.param(name + ".weight", DType::f32, {out, in}), false, true);
  return bias ? b.add(y, b.param(name + ".bias", DType::f32, {out})) : y;
}

// RMSNorm of x's last axis by the param `name`.weight [dim]; Gemma's (1 + w) form as n + n * w
// with n normed by a gain of ones, since the ANE computes nothing on a weight alone when the
// weights are kernel inputs (lower_layout), and n * (1 + w) would.
Value norm_by(Builder& b, Value x, const std::string& name, std::int64_t dim, const LlamaConfig& c) {
  Value w = b.param(name + ".weight", DType::f32, {dim});
  if (!c.norm_plus_one) return b.rms_norm(x, w, c.rms_norm_eps);
  Tensor ones(DType::f32, {dim});
  std::fill(ones.span<float>().begin(), ones.span<float>().end(), 1.0f);
  Value n = b.rms_norm(x, b.constant(std::move(ones)), c.rms_norm_eps);
  return b.add(n, b.mul(n, w));
}

// Qwen3's q_norm / k_norm: RMSNorm of every head's head_dim columns with one gain [head_dim],
// on the head split [S, heads, D] the ANE lowering also knows (a reduction over D per head).
Value head_rms_norm(Builder& b, Value x, const std::string& name, std::int64_t heads, const LlamaConfig& c) {
  const std::int64_t rows = b.shape(x)[0], D = c.head_dim();
  Value split = b.reshape(x, {rows, heads, D});
  return b.reshape(norm_by(b, split, name, D, c), {rows, heads * D});
}

Value rms_norm(Builder& b, Value x, const std::string& name, const LlamaConfig& c) {
  return norm_by(b, x, name, c.hidden_size, c);
}

struct LayerInputs {
  Value mask, cos, sin;
  std::optional<Value> past_k, past_v;
  // The ANE form's: tables tiled for the key heads, the rotations, the key/value heads' expansion.
  std::optional<Value> cos_k, sin_k, rotate_q, rotate_k, expand_kv;
  std::vector<Value> group_select;  // decode's grouped-query heads: one selection per group
  std::optional<Value> rows_mask;   // a chunk's causal mask over its rows (attention_over_cache)
};

// [kv_width, hidden]: 1 where key/value head kv's column d feeds query head h's column d
// (h / G == kv); x E repeats every key/value head for its G query heads, as repeat_kv does.
Tensor expand_kv_matrix(const LlamaConfig& c) {
  const std::int64_t D = c.head_dim(), G = c.num_attention_heads / c.num_key_value_heads;
  const std::int64_t rows = c.kv_width(), cols = c.q_width();
  Tensor e(DType::f32, {rows, cols});  // zero-filled
  float* p = e.data<float>();
  for (std::int64_t h = 0; h < c.num_attention_heads; ++h)
    for (std::int64_t d = 0; d < D; ++d) p[((h / G) * D + d) * cols + h * D + d] = 1.0f;
  return e;
}

// [q_width, kv_width] for group g: 1 where query head kv * G + g's column d meets column d of
// key/value head kv. q E_g gathers group g's query heads in key-head order, att E_g^T puts
// their attention back in their places: each group attends over the cache as it is.
Tensor group_select_matrix(const LlamaConfig& c, std::int64_t g) {
  const std::int64_t D = c.head_dim(), G = c.num_attention_heads / c.num_key_value_heads;
  const std::int64_t cols = c.kv_width();
  Tensor e(DType::f32, {c.q_width(), cols});  // zero-filled
  float* p = e.data<float>();
  for (std::int64_t kv = 0; kv < c.num_key_value_heads; ++kv)
    for (std::int64_t d = 0; d < D; ++d) p[((kv * G + g) * D + d) * cols + kv * D + d] = 1.0f;
  return e;
}

struct LayerOutputs {
  Value y, k, v;
};

// Grouped-query attention without copying keys: the H query heads, head-major, are regrouped
// as [KV, G * T, D] (query head h = kv * G + g reads key head kv, as Hugging Face's repeat_kv
// has it), so one batched product per key head serves its whole group. With a batch of windows
// every shape gains a leading [batch] (one window keeps the inference graphs' shapes).
Value attention(Builder& b, Value q, Value k_all, Value v_all, Value mask, const LlamaConfig& c, std::int64_t batch) {
  const std::int64_t B = batch, T = b.shape(q)[0] / B, S = b.shape(k_all)[0] / B;
  const std::int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, G = H / KV, D = c.head_dim();
  auto shape = [&](std::vector<std::int64_t> dims) {
    if (B > 1) dims.insert(dims.begin(), B);
    return dims;
  };
  const std::vector<std::int64_t> swap = B > 1 ? std::vector<std::int64_t>{0, 2, 1, 3} : std::vector<std::int64_t>{1, 0, 2};
  auto heads = [&](Value t, std::int64_t n) {  // [B * rows, n * D] -> [B, n, rows, D]
    return b.transpose(b.reshape(t, shape({b.shape(t)[0] / B, n, D})), swap);
  };
  Value qg = b.reshape(heads(q, H), shape({KV, G * T, D}));
  Value scores = b.mul(b.matmul(qg, heads(k_all, KV), false, true),
                       b.scalar(static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)))));
  Value probs = b.softmax(b.add(b.reshape(scores, shape({H, T, S})), mask), -1);
  Value out = b.matmul(b.reshape(probs, shape({KV, G * T, S})), heads(v_all, KV));  // [B, KV, G * T, D]
  return b.reshape(b.transpose(b.reshape(out, shape({H, T, D})), swap), {B * T, H * D});  // [B * T, q_width]
}

// `inv`: what every addition to the residual stream is multiplied by (1 / residual_scale).
LayerOutputs finish_layer(Builder& b, Value x, const LlamaConfig& c, LayerOutputs out, float inv);
Value attention_residual(Builder& b, Value x, Value att, const LlamaConfig& c, std::optional<Value> gate, float inv);

// y scaled by `inv` for the residual stream (nothing when it is 1).
Value to_stream(Builder& b, Value y, float inv) { return inv == 1.0f ? y : b.mul(y, b.scalar(inv)); }

LayerOutputs layer(Builder& b, Value x, const LlamaConfig& c, int index, const LayerInputs& in, std::int64_t batch, float inv) {
  const std::int64_t C = c.hidden_size, KVW = c.kv_width();
  const std::int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
  b.push_scope("model.layers." + std::to_string(index));
  Value h = rms_norm(b, x, "input_layernorm", c);
  const bool ane = in.rotate_q.has_value();
  auto rope = [&](Value t, std::int64_t heads) {
    if (!ane) return apply_rope(b, t, in.cos, in.sin, heads, D, c.rotary_dim());
    return heads == H ? apply_rope_product(b, t, in.cos, in.sin, *in.rotate_q)
                      : apply_rope_product(b, t, *in.cos_k, *in.sin_k, *in.rotate_k);
  };
  std::optional<Value> gate;  // Qwen3.5's: q_proj's second half of every head
  auto project = [&](const char* proj, const char* norm, std::int64_t heads) {
    const bool gated = c.attn_output_gate && heads == H && std::string_view(proj) == "q_proj";
    Value t = linear(b, h, std::string("self_attn.") + proj, C, (gated ? 2 : 1) * heads * D, c.qkv_bias);
    if (gated) {
      // Each head's query and gate side by side: a split a device's program makes on the host
      // (the scope kGateSplitScope names; LlamaModel::ane_host_nodes), since the heads'
      // halves interleave on the channels a kernel's value keeps whole.
      b.push_scope(kGateSplitScope);
      const std::int64_t rows = b.shape(t)[0];
      Value both = b.reshape(t, {rows, H, 2 * D});
      gate = b.reshape(b.slice(both, {0, 0, D}, {rows, H, 2 * D}), {rows, H * D});
      t = b.reshape(b.slice(both, {0, 0, 0}, {rows, H, D}), {rows, H * D});
      b.pop_scope();
    }
    if (c.qk_norm) t = head_rms_norm(b, t, std::string("self_attn.") + norm, heads, c);
    return rope(t, heads);
  };
  Value q = project("q_proj", "q_norm", H);
  if (const double s = c.query_prescale(); s != 1.0) q = b.mul(q, b.scalar(static_cast<float>(s)));
  LayerOutputs out;
  out.k = project("k_proj", "k_norm", KV);
  out.v = linear(b, h, "self_attn.v_proj", C, KVW, c.qkv_bias);
  Value att;
  if (ane && in.past_k) {  // (past positions come one window at a time: check_graph_options)
    // A decode step's cache kept apart from the token (model/attention.h). With grouped-query
    // heads, each group's query heads attend over the cache as it is (KV heads) and their
    // outputs are put back in place: expanding the cache to H heads instead would be a product
    // over every cached position, each step.
    if (in.group_select.empty()) {
      att = attention_over_cache(b, q, *in.past_k, out.k, *in.past_v, out.v, in.mask, H, in.rows_mask);
    } else {
      for (const Value& sel : in.group_select) {
        Value qg = b.matmul(q, sel);
        Value part =
            b.matmul(attention_over_cache(b, qg, *in.past_k, out.k, *in.past_v, out.v, in.mask, KV, in.rows_mask), sel, false, true);
        att = att.id >= 0 ? b.add(att, part) : part;
      }
    }
    return finish_layer(b, attention_residual(b, x, att, c, gate, inv), c, out, inv);
  }
  Value k_all = in.past_k ? b.concat({*in.past_k, out.k}, 0) : out.k;
  Value v_all = in.past_v ? b.concat({*in.past_v, out.v}, 0) : out.v;
  if (ane) {
    if (in.expand_kv) {
      k_all = b.matmul(k_all, *in.expand_kv);
      v_all = b.matmul(v_all, *in.expand_kv);
    }
    att = multi_head_attention(b, q, k_all, v_all, in.mask, H, batch);
  } else {
    att = attention(b, q, k_all, v_all, in.mask, c, batch);
  }
  return finish_layer(b, attention_residual(b, x, att, c, gate, inv), c, out, inv);
}

// x + o_proj(att), the attention gated first (Qwen3.5), the projection normed after with
// sandwich norms (Gemma 3).
Value attention_residual(Builder& b, Value x, Value att, const LlamaConfig& c, std::optional<Value> gate, float inv) {
  if (gate) att = b.mul(att, b.sigmoid(*gate));
  Value y = linear(b, att, "self_attn.o_proj", c.q_width(), c.hidden_size, c.o_bias);
  if (c.sandwich_norms) y = rms_norm(b, y, "post_attention_layernorm", c);
  return b.add(x, to_stream(b, y, inv));
}

// The rest of a layer after its attention: the MLP, and the scope the layer opened.
LayerOutputs finish_layer(Builder& b, Value x, const LlamaConfig& c, LayerOutputs out, float inv) {
  const std::int64_t C = c.hidden_size, F = c.intermediate_size;
  Value h = rms_norm(b, x, c.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm", c);
  // Two statements, not two arguments of one call: the params' order is the order init draws
  // their weights in (llama_init_weights), and C++ leaves the order of a call's arguments open
  // (GCC made up_proj first, clang gate_proj, so a seed gave other weights under clang). Up
  // first keeps the weights every seed has given so far.
  Value up = linear(b, h, "mlp.up_proj", C, F);
  Value gate = linear(b, h, "mlp.gate_proj", C, F);
  Value gated = b.mul(c.gelu_mlp ? b.gelu(gate) : b.silu(gate), up);
  Value down = linear(b, gated, "mlp.down_proj", F, C);
  if (c.sandwich_norms) down = rms_norm(b, down, "post_feedforward_layernorm", c);
  out.y = b.add(x, to_stream(b, down, inv));
  b.pop_scope();
  return out;
}

// A Gated DeltaNet layer (Qwen3.5): the mixer in attention's place, then the MLP. Its state
// before the window comes in as past_conv.L and past_state.L after a cache, and leaves as
// conv.L and state.L, in the places of k.L and v.L (model/causal_lm.h).
// Returns the layer's output and, but for the training graph, its state.
GatedDeltaOutputs delta_layer(Builder& b, Value x, const LlamaConfig& c, int index, const LlamaGraphOptions& o) {
  const std::string ls = std::to_string(index);
  std::optional<Value> past_conv, past_state;
  if (o.past > 0) {
    past_conv = b.input("past_conv." + ls, DType::f32, gated_delta_conv_shape(c));
    past_state = b.input("past_state." + ls, DType::f32, gated_delta_state_shape(c));
  }
  b.push_scope("model.layers." + ls);
  GatedDeltaOutputs mixer = gated_delta(b, rms_norm(b, x, "input_layernorm", c), c, o.batch, past_conv, past_state, !o.loss);
  const auto inv = static_cast<float>(1.0 / o.residual_scale);
  mixer.y = finish_layer(b, b.add(x, to_stream(b, mixer.y, inv)), c, {}, inv).y;
  return mixer;
}

}  // namespace

ir::Graph llama_graph(const LlamaConfig& c, const LlamaGraphOptions& o) {
  check_graph_options(o, c.context(), c.model_type);
  const std::int64_t T = o.seq, C = c.hidden_size, rows = o.batch * o.seq;
  Builder b(o.loss ? "llama_train" : o.past > 0 ? "llama_decode" : "llama_prefill");
  Value tokens = b.input("tokens", DType::i32, {rows});
  Value positions = b.input("positions", DType::i32, {rows});
  Value embed = b.param("model.embed_tokens.weight", DType::f32, {c.vocab_size, C});
  Value x = b.name(b.gather(embed, tokens), "embed");
  if (!(o.residual_scale >= 1 && std::exp2(std::round(std::log2(o.residual_scale))) == o.residual_scale))
    throw Error(c.model_type + ": a residual scale of " + std::to_string(o.residual_scale) + " is not a power of two >= 1");
  const auto inv = static_cast<float>(1.0 / o.residual_scale);
  if (c.embed_scale != 1.0 || inv != 1.0f) x = b.mul(x, b.scalar(static_cast<float>(c.embed_scale) * inv));

  auto rows_of = [&](Tensor table, const std::string& name) {  // the window's rows, gathered on the host
    return b.name(b.gather(b.name(b.constant(std::move(table)), name + "_table"), positions), name);
  };
  // The rotation's inputs of one kind of layer (Gemma 3's sliding layers have their own tables).
  auto rotation_inputs = [&](bool sliding, LayerInputs& in) {
    RopeTables tables = rope_tables(c, sliding);
    const std::string suffix = sliding && has_local_rope(c) ? "_local" : "";
    if (!o.ane_form) {
      in.cos = rows_of(std::move(tables.cos), "rope_cos" + suffix);
      in.sin = rows_of(std::move(tables.sin), "rope_sin" + suffix);
      return;
    }
    // Per-head tables, the rotation and the heads' expansion as constants the device takes.
    const std::int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
    in.cos = rows_of(tile_heads(tables.cos, H), "rope_cos" + suffix);
    in.sin = rows_of(tile_heads(tables.sin, H), "rope_sin" + suffix);
    in.cos_k = in.cos;
    in.sin_k = in.sin;
    if (KV != H) {
      in.cos_k = rows_of(tile_heads(tables.cos, KV), "rope_cos_kv" + suffix);
      in.sin_k = rows_of(tile_heads(tables.sin, KV), "rope_sin_kv" + suffix);
    }
    if (sliding) return;  // the constants below are the global layers'
    in.rotate_q = b.name(b.constant(rotate_half_matrix(H, D, c.rotary_dim())), "rope_rotate");
    in.rotate_k = in.rotate_q;
    if (KV != H) {
      in.rotate_k = b.name(b.constant(rotate_half_matrix(KV, D, c.rotary_dim())), "rope_rotate_kv");
      // A window from position 0 expands its keys and values; a step after a cache selects
      // the query heads group by group (layer()).
      if (o.past == 0) in.expand_kv = b.name(b.constant(expand_kv_matrix(c)), "expand_kv");
      else
        for (std::int64_t g = 0; g < H / KV; ++g)
          in.group_select.push_back(b.name(b.constant(group_select_matrix(c, g)), "gqa_group" + std::to_string(g)));
    }
  };
  // The ANE form's rows see the cache and their own key (model/attention.h), or a chunk's the
  // cache through the mask and each other through a causal constant; the other form's rows the
  // cache and the rows before them. A sliding layer's mask also hides the keys `window` or more
  // positions back: a constant from position 0, the host's "mask_local" after a cache.
  const bool chunk = o.ane_form && o.past > 0 && T > 1 && o.sequences == 1;
  const Shape mask_shape{T, o.past + (o.ane_form ? (chunk ? 0 : 1) : T)};
  auto mask_inputs = [&](std::int64_t window, LayerInputs& in) {
    if (chunk) in.rows_mask = causal_mask(b, T, window);
    in.mask = o.past > 0 ? b.input(window > 0 ? "mask_local" : "mask", DType::f32, mask_shape) : causal_mask(b, T, window);
  };
  LayerInputs global_in, local_in;
  rotation_inputs(false, global_in);
  mask_inputs(0, global_in);
  if (!c.sliding_layers.empty()) {
    local_in = global_in;
    if (has_local_rope(c)) rotation_inputs(true, local_in);
    mask_inputs(*c.sliding_window, local_in);
  }
  std::vector<Value> cache_out;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string ls = std::to_string(l);
    if (c.linear_layer(l)) {
      const GatedDeltaOutputs out = delta_layer(b, x, c, l, o);
      if (out.conv) {
        cache_out.push_back(b.name(*out.conv, "conv." + ls));
        cache_out.push_back(b.name(*out.state, "state." + ls));
      }
      x = b.name(out.y, "layer_out." + ls);
      continue;
    }
    LayerInputs& in = c.sliding_layer(l) ? local_in : global_in;
    if (o.past > 0) {
      in.past_k = b.input("past_k." + ls, DType::f32, {o.past, c.kv_width()});
      in.past_v = b.input("past_v." + ls, DType::f32, {o.past, c.kv_width()});
    }
    LayerOutputs out = layer(b, x, c, l, in, o.batch, inv);
    cache_out.push_back(b.name(out.k, "k." + ls));
    cache_out.push_back(b.name(out.v, "v." + ls));
    x = b.name(out.y, "layer_out." + ls);  // where a layer ends (ProgramSpec::layer_ends)
  }
  if (o.last_only && T > 1) x = b.slice(x, {T - 1, 0}, {T, C});
  x = rms_norm(b, x, "model.norm", c);
  Value head = c.tie_word_embeddings ? embed : b.param("lm_head.weight", DType::f32, {c.vocab_size, C});
  Value logits = b.name(b.matmul(x, head, false, true), "logits");
  if (o.loss) {
    add_loss_output(b, logits);
    return b.finish();
  }
  b.output(logits);
  for (Value v : cache_out) b.output(v);
  return b.finish();
}

}  // namespace orion::model
