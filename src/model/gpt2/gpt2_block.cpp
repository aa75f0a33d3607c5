#include "model/gpt2/gpt2_block.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "model/attention.h"

namespace orion::model {

namespace {

using ir::Builder;
using ir::Value;

// Hugging Face's Conv1D: y = x @ W + b with W stored [in, out].
Value conv1d(Builder& b, Value x, const std::string& name, std::int64_t in, std::int64_t out) {
  Value w = b.param(name + ".weight", DType::f32, {in, out});
  Value bias = b.param(name + ".bias", DType::f32, {out});
  return b.add(b.matmul(x, w), bias);
}

Value layer_norm(Builder& b, Value x, const std::string& name, const Gpt2BlockShape& s) {
  return b.layer_norm(x, b.param(name + ".weight", DType::f32, {s.dim}),
                      b.param(name + ".bias", DType::f32, {s.dim}), s.epsilon);
}

}  // namespace

// 0 on and below the diagonal, -inf above: exp gives exactly 0, and the diagonal is always
// allowed, so no row is all -inf.
Value causal_mask(Builder& b, std::int64_t seq, std::int64_t window) {
  Tensor m(DType::f32, {seq, seq});
  float* p = m.data<float>();
  for (std::int64_t i = 0; i < seq; ++i)
    for (std::int64_t j = 0; j < seq; ++j)
      p[i * seq + j] = j <= i && (window == 0 || i - j < window) ? 0.0f : -std::numeric_limits<float>::infinity();
  return b.name(b.constant(m), window == 0 ? "causal_mask" : "sliding_mask");
}

BlockOutputs gpt2_block(Builder& b, Value x, const Gpt2BlockShape& s, int layer,
                        const AttentionContext& ctx) {
  if (s.heads <= 0 || s.dim % s.heads != 0)
    throw Error("gpt2 block: dim " + std::to_string(s.dim) + " is not a multiple of heads " +
                std::to_string(s.heads));
  const std::int64_t T = s.seq, C = s.dim, H = s.heads, B = s.batch;
  if (B < 1 || (B > 1 && ctx.past_k)) throw Error("gpt2 block: a batch of " + std::to_string(B) + " windows with past positions");
  b.push_scope("h." + std::to_string(layer));

  // Attention.
  Value h = layer_norm(b, x, "ln_1", s);
  Value qkv = conv1d(b, h, "attn.c_attn", C, 3 * C);
  auto part = [&](std::int64_t i) { return b.slice(qkv, {0, i * C}, {B * T, (i + 1) * C}); };
  BlockOutputs out;
  out.k = part(1);
  out.v = part(2);
  Value att;
  if (ctx.past_k && ctx.cache_apart) {
    att = attention_over_cache(b, part(0), *ctx.past_k, out.k, *ctx.past_v, out.v, ctx.mask, H, ctx.rows_mask);
  } else {
    Value k_all = ctx.past_k ? b.concat({*ctx.past_k, out.k}, 0) : out.k;
    Value v_all = ctx.past_v ? b.concat({*ctx.past_v, out.v}, 0) : out.v;
    att = multi_head_attention(b, part(0), k_all, v_all, ctx.mask, H, B);
  }
  x = b.add(x, conv1d(b, att, "attn.c_proj", C, C));

  // MLP.
  h = layer_norm(b, x, "ln_2", s);
  Value m = b.gelu(conv1d(b, h, "mlp.c_fc", C, s.hidden()));
  out.y = b.add(x, conv1d(b, m, "mlp.c_proj", s.hidden(), C));
  b.pop_scope();
  return out;
}

ir::Graph gpt2_block_graph(const Gpt2BlockShape& shape) {
  Builder b("gpt2_block");
  Value x = b.input("x", DType::f32, {shape.seq, shape.dim});
  b.output(b.name(gpt2_block(b, x, shape, 0, {causal_mask(b, shape.seq), {}, {}, false, {}}).y, "y"));
  return b.finish();
}

std::map<std::string, Tensor, std::less<>> gpt2_init_params(const ir::Graph& graph, int n_layer,
                                                            Rng& rng) {
  std::map<std::string, Tensor, std::less<>> params;
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(n_layer));
  for (ir::ValueId id : graph.nodes_of(ir::Op::param)) {
    const ir::Node& n = graph.node(id);
    Tensor t(DType::f32, n.type.shape);
    auto v = t.span<float>();
    const bool is_bias = n.name.ends_with(".bias");
    if (n.type.rank() == 1 && !is_bias) {
      std::fill(v.begin(), v.end(), 1.0f);  // layer-norm gain
    } else if (!is_bias) {
      const bool residual = n.name.ends_with("c_proj.weight");
      rng.fill_normal(v, 0.0f, residual ? residual_std : 0.02f);
    }
    params.emplace(n.name, std::move(t));
  }
  return params;
}

std::int64_t gpt2_block_macs(const Gpt2BlockShape& s) {
  const std::int64_t T = s.seq, C = s.dim, rows = s.batch * s.seq;
  const std::int64_t projections = rows * C * (3 * C) + rows * C * C + 2 * rows * C * s.hidden();
  const std::int64_t attention = 2 * rows * T * C;  // q k^T and probs v over all heads
  return projections + attention;
}

}  // namespace orion::model
