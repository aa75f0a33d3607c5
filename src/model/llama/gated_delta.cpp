#include "model/llama/gated_delta.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace orion::model {

namespace {

using ir::Builder;
using ir::Value;

// [L, L] constants of a chunk: `inside(r, s)` gives `yes`, the rest `no`.
template <typename Inside>
Tensor chunk_matrix(std::int64_t L, Inside inside, float yes, float no) {
  Tensor t(DType::f32, {L, L});
  float* p = t.data<float>();
  for (std::int64_t r = 0; r < L; ++r)
    for (std::int64_t s = 0; s < L; ++s) p[r * L + s] = inside(r, s) ? yes : no;
  return t;
}

Tensor zeros(Shape shape) { return Tensor(DType::f32, std::move(shape)); }  // zero-filled

// softplus(x) = relu(x) + log(1 + e^-|x|): no exponential of a positive number.
Value softplus(Builder& b, Value x) {
  Value pos = b.relu(x), abs = b.add(pos, b.relu(b.neg(x)));
  return b.add(pos, b.log(b.add(b.scalar(1.0f), b.exp(b.neg(abs)))));
}

// x / sqrt(sum(x^2) + 1e-6) over the last axis (the FLA kernels' l2norm transformers uses).
Value l2_normalise(Builder& b, Value x) {
  return b.mul(x, b.rsqrt(b.add(b.reduce_sum(b.mul(x, x), {-1}, true), b.scalar(1e-6f))));
}

// (I + A)^-1 of the strictly lower-triangular A [M, L, L] by doubling blocks (the header).
std::optional<Value> unit_lower_inverse(Builder& b, Value A, std::int64_t L) {
  std::optional<Value> inv;  // nullopt: the identity
  for (std::int64_t s = 1; s < L; s *= 2) {
    // A's entries in the lower-left quarter of each diagonal block of 2s.
    auto off_block = [s](std::int64_t r, std::int64_t col) {
      return r / (2 * s) == col / (2 * s) && r % (2 * s) >= s && col % (2 * s) < s;
    };
    Value part = b.mul(A, b.constant(chunk_matrix(L, off_block, 1.0f, 0.0f)));
    if (!inv) {
      inv = b.sub(b.constant(chunk_matrix(L, [](std::int64_t r, std::int64_t col) { return r == col; }, 1.0f, 0.0f)), part);
    } else {
      inv = b.sub(*inv, b.matmul(b.matmul(*inv, part), *inv));
    }
  }
  return inv;
}

}  // namespace

std::set<std::string, std::less<>> gated_delta_host_nodes(const ir::Graph& g) {
  std::set<std::string, std::less<>> host;
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.name.find(".linear_attn.") == std::string::npos || n.op == ir::Op::param || n.op == ir::Op::constant) continue;
    if (n.op == ir::Op::matmul) {
      const std::string& w = g.node(n.inputs[1]).name;
      if (w.ends_with(".weight") && (w.find(".linear_attn.in_proj_") != std::string::npos || w.ends_with(".linear_attn.out_proj.weight")))
        continue;
    }
    host.insert(n.name);
  }
  return host;
}

Shape gated_delta_conv_shape(const LlamaConfig& c) { return {c.linear.conv_kernel - 1, c.linear.conv_width()}; }

Shape gated_delta_state_shape(const LlamaConfig& c) {
  return {c.linear.value_heads, c.linear.key_head_dim, c.linear.value_head_dim};
}

GatedDeltaOutputs gated_delta(Builder& b, Value h, const LlamaConfig& c, std::int64_t batch,
                              std::optional<Value> past_conv, std::optional<Value> past_state, bool state_out) {
  const LinearAttention& la = c.linear;
  const std::int64_t B = batch, rows = b.shape(h)[0], T = rows / B, C = c.hidden_size;
  const std::int64_t Hk = la.key_heads, Hv = la.value_heads, dk = la.key_head_dim, dv = la.value_head_dim;
  const std::int64_t K = la.conv_kernel, CW = la.conv_width(), KW = la.key_width(), VW = la.value_width();
  b.push_scope("linear_attn");
  auto proj = [&](Value x, const char* name, std::int64_t in, std::int64_t out) {
    return b.matmul(x, b.param(std::string(name) + ".weight", DType::f32, {out, in}), false, true);
  };
  // One statement each: the params' order is the order init draws them in.
  Value mixed = proj(h, "in_proj_qkv", C, CW);
  Value z = proj(h, "in_proj_z", C, VW);
  Value beta_logit = proj(h, "in_proj_b", C, Hv);
  Value a = proj(h, "in_proj_a", C, Hv);

  // The causal depthwise convolution over each window's positions, after the K - 1 inputs
  // before it (the state, or zeros).
  Value taps = b.transpose(b.reshape(b.param("conv1d.weight", DType::f32, {CW, 1, K}), {CW, K}), {1, 0});  // [K, CW]
  Value before = past_conv ? b.reshape(*past_conv, {1, K - 1, CW}) : b.constant(zeros({B, K - 1, CW}));
  Value xin = b.concat({before, b.reshape(mixed, {B, T, CW})}, 1);  // [B, K - 1 + T, CW]
  Value conv;
  for (std::int64_t j = 0; j < K; ++j) {
    Value term = b.mul(b.slice(xin, {0, j, 0}, {B, j + T, CW}), b.reshape(b.slice(taps, {j, 0}, {j + 1, CW}), {1, 1, CW}));
    conv = j == 0 ? term : b.add(conv, term);
  }
  GatedDeltaOutputs out;
  if (state_out) out.conv = b.reshape(b.slice(xin, {0, T, 0}, {1, T + K - 1, CW}), {K - 1, CW});
  Value act = b.reshape(b.silu(conv), {rows, CW});
  auto heads = [&](std::int64_t begin, std::int64_t n, std::int64_t d) {
    return b.reshape(b.slice(act, {0, begin}, {rows, begin + n * d}), {rows, n, d});
  };
  Value q = b.mul(l2_normalise(b, heads(0, Hk, dk)), b.scalar(static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk)))));
  Value k = l2_normalise(b, heads(KW, Hk, dk));
  Value v = heads(2 * KW, Hv, dv);
  if (const std::int64_t r = Hv / Hk; r > 1) {  // value head i reads key head i / r
    auto expand = [&](Value t) { return b.reshape(b.broadcast_to(b.reshape(t, {rows, Hk, 1, dk}), {rows, Hk, r, dk}), {rows, Hv, dk}); };
    q = expand(q);
    k = expand(k);
  }
  Value beta = b.sigmoid(beta_logit);                                           // [rows, Hv]
  Value A_log = b.param("A_log", DType::f32, {Hv});
  Value dt_bias = b.param("dt_bias", DType::f32, {Hv});
  Value g = b.mul(b.neg(b.exp(A_log)), softplus(b, b.add(a, dt_bias)));  // [rows, Hv], <= 0

  // Heads first, padded to whole chunks (zero g, beta and keys: the padding changes nothing),
  // chunks folded into the batch: [N * n, L, d] with N = B * Hv.
  const std::int64_t N = B * Hv, L = std::min(kDeltaChunk, T), n = (T + L - 1) / L, M = N * n, P = n * L;
  auto chunked = [&](Value t, std::int64_t d) {
    Value x = b.reshape(b.transpose(b.reshape(t, {B, T, Hv, d}), {0, 2, 1, 3}), {N, T, d});
    if (P > T) x = b.concat({x, b.constant(zeros({N, P - T, d}))}, 1);
    return b.reshape(x, {M, L, d});
  };
  Value qc = chunked(q, dk), kc = chunked(k, dk), vc = chunked(v, dv);
  Value gc = chunked(g, 1), bc = chunked(beta, 1);  // [M, L, 1]

  Value cum = b.matmul(b.constant(chunk_matrix(L, [](std::int64_t r, std::int64_t s) { return s <= r; }, 1.0f, 0.0f)), gc);
  Value diff = b.sub(cum, b.reshape(cum, {M, 1, L}));  // c_r - c_s
  // e^(c_r - c_s) on and below the diagonal, 0 above (where the difference is positive).
  Value decay = b.exp(b.add(diff, b.constant(chunk_matrix(L, [](std::int64_t r, std::int64_t s) { return s <= r; }, 0.0f,
                                                           -std::numeric_limits<float>::infinity()))));
  Value strict = b.constant(chunk_matrix(L, [](std::int64_t r, std::int64_t s) { return s < r; }, 1.0f, 0.0f));
  Value A = b.mul(b.mul(b.matmul(kc, kc, false, true), b.mul(decay, strict)), bc);
  const std::optional<Value> inv = unit_lower_inverse(b, A, L);
  Value e_cum = b.exp(cum);
  Value vb = b.mul(vc, bc), kb = b.mul(kc, b.mul(bc, e_cum));
  Value U = inv ? b.matmul(*inv, vb) : vb;  // the deltas from a zero state
  Value W = inv ? b.matmul(*inv, kb) : kb;  // and what a state S0 takes from them: W S0
  Value qk = b.mul(b.matmul(qc, kc, false, true), decay);
  Value qe = b.mul(qc, e_cum);
  Value last = b.slice(cum, {0, L - 1, 0}, {M, L, 1});  // [M, 1, 1]
  Value kd = b.mul(kc, b.exp(b.sub(last, cum)));
  Value e_last = b.exp(last);

  // Chunk after chunk: the state carries across.
  auto chunk_of = [&](Value t, std::int64_t i) {
    const Shape s = b.shape(t);
    Value x = b.reshape(t, {N, n, s[1], s[2]});
    return b.reshape(b.slice(x, {0, i, 0, 0}, {N, i + 1, s[1], s[2]}), {N, s[1], s[2]});
  };
  std::optional<Value> S;
  if (past_state) S = b.reshape(*past_state, {N, dk, dv});
  std::vector<Value> outs;
  for (std::int64_t i = 0; i < n; ++i) {
    Value Di = S ? b.sub(chunk_of(U, i), b.matmul(chunk_of(W, i), *S)) : chunk_of(U, i);
    Value Oi = b.matmul(chunk_of(qk, i), Di);
    if (S) Oi = b.add(b.matmul(chunk_of(qe, i), *S), Oi);
    outs.push_back(Oi);
    if (i + 1 < n || state_out) {
      Value written = b.matmul(chunk_of(kd, i), Di, true, false);  // [N, dk, dv]
      S = S ? b.add(b.mul(*S, chunk_of(e_last, i)), written) : written;
    }
  }
  Value o = outs.size() == 1 ? outs[0] : b.concat(outs, 1);  // [N, P, dv]
  if (P > T) o = b.slice(o, {0, 0, 0}, {N, T, dv});
  o = b.reshape(b.transpose(b.reshape(o, {B, Hv, T, dv}), {0, 2, 1, 3}), {rows, Hv, dv});
  if (state_out) out.state = b.reshape(*S, {Hv, dk, dv});

  // The gated norm: the weight itself (not 1 + w), per head, then silu(z).
  Value normed = b.rms_norm(o, b.param("norm.weight", DType::f32, {dv}), c.rms_norm_eps);
  Value gated = b.reshape(b.mul(normed, b.silu(b.reshape(z, {rows, Hv, dv}))), {rows, VW});
  out.y = proj(gated, "out_proj", VW, C);
  b.pop_scope();
  return out;
}

}  // namespace orion::model
