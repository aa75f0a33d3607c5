// Batched prefill of the fast Llama engine: the whole prompt at once, as matrix products
// through oneDNN's sgemm, where step_layers() streams every weight once per token; GPT-2's
// (gpt2_fast_prefill.cpp) with Llama's maths, sharing its linear layers and causal attention
// (engine/fast/fast_prefill.h). Per row: RMSNorm, the rotation of q and k at the row's position
// (model/llama/rope.h's tables, after Qwen3's per-head norms, as step_layers() does), SwiGLU (or
// Gemma's GeGLU and sandwich norms, and its sliding layers' windows). The rotated keys and the values go
// into the session's cache where step_layers() puts them, so decoding continues from a batched prompt
// as from a token-by-token one; f16 and q8 matrices are expanded to f32 for the BLAS. A Gated
// DeltaNet layer (Qwen3.5) batches its projections and steps its state row after row between
// them (engine/fast/gated_delta_fast.h).
// batch_layers: the same over one token of each of several sessions (FastSession::decode_batch).
#include <cmath>
#include <functional>
#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "engine/fast/fast_attention.h"
#include "engine/fast/fast_prefill.h"
#include "engine/fast/fast_rows.h"
#include "engine/fast/llama_fast.h"

namespace orion::engine {

using exec::cpu::gemm_parallel_for;
using prefill::linear;

double LlamaFastSession::batched_prefill_flops(const model::LlamaConfig& c, std::int64_t cached, std::int64_t tokens) {
  const auto T = static_cast<double>(tokens), C = static_cast<double>(c.hidden_size);
  const auto KVW = static_cast<double>(c.kv_width()), F = static_cast<double>(c.intermediate_size);
  const auto QW = static_cast<double>(c.num_attention_heads * c.head_dim());
  const double gates = c.attn_output_gate ? QW : 0;
  // q, k, v (and gates); o; gate and up; down
  const double full = 2 * T * (C * (QW + 2 * KVW + gates) + QW * C) + prefill::attention_flops(cached, tokens, c.num_attention_heads * c.head_dim());
  const double mlp = 2 * T * (C * 2 * F + F * C);
  // A Gated DeltaNet layer: its stacked projection and out_proj (its recurrent steps are no
  // matrix product and are left out).
  const model::LinearAttention& la = c.linear;
  const auto in_width = static_cast<double>(la.conv_width() + la.value_width() + 2 * la.value_heads);
  const double linear = 2 * T * (C * in_width + static_cast<double>(la.value_width()) * C);
  double layers = 0;
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) layers += mlp + (c.linear_layer(l) ? linear : full);
  return layers + 2 * C * static_cast<double>(c.vocab_size);
}

void LlamaFastSession::batch_layers(std::span<const BatchRow> batch) {
  const LlamaFastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t C = c.hidden_size, H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
  const std::int64_t QW = H * D, KVW = c.kv_width(), QKVW = m.qkv_width(), F = c.intermediate_size, P = c.context();
  const auto B = static_cast<std::int64_t>(batch.size());
  const float scale = m.attention_scale();
  const RowBuffers rb = row_buffers();  // named, not bound: clang 14 cannot capture bindings
  float *X = rb.x, *Hn = rb.normed, *QKV = rb.qkv, *A = rb.attention, *GU = rb.mlp;
  const auto norm_rows = [&](const std::vector<float>& g) {
    for (std::int64_t t = 0; t < B; ++t) rms_norm_row(X + t * C, g.data(), c.rms_norm_eps, Hn + t * C, static_cast<std::size_t>(C));
  };
  // X += lin(in), through Hn (free by then) when the output is normed first (Gemma's sandwich).
  const auto add_linear = [&](const PackedLinear& lin, const float* in, const std::vector<float>& out_norm, std::int64_t ldx) {
    if (out_norm.empty()) return batch_linear(lin, in, B, X, true, ldx);
    batch_linear(lin, in, B, Hn, false, ldx);
    for (std::int64_t t = 0; t < B; ++t) m.add_output(out_norm, Hn + t * C, X + t * C);
  };
  std::vector<AttentionRow> rows;
  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const LlamaFastLayer& L = m.layers_[l];
    const auto finish_mlp = [&] {
      norm_rows(L.mlp_norm);
      batch_linear(L.gate_up, Hn, B, GU, false);
      for (std::int64_t t = 0; t < B; ++t) m.glu_row(GU + t * 2 * F);
      add_linear(L.down, GU, L.mlp_out_norm, 2 * F);
    };
    norm_rows(L.attn_norm);
    batch_linear(L.qkv, Hn, B, QKV, false);
    if (L.delta) {  // each row steps its own session's state, in the rows' order
      const std::int64_t PW = L.delta->projection_width(), VW = L.delta->shape.value_width();
      for (std::int64_t b = 0; b < B; ++b) {
        const BatchRow& r = batch[static_cast<std::size_t>(b)];
        FastDeltaState& state = static_cast<LlamaFastSession*>(r.session)->delta_state(l, r.position);
        delta_token(*L.delta, QKV + b * PW, state, A + b * VW, pool_heads());
      }
      add_linear(L.o, A, L.attn_out_norm, 0);
      finish_mlp();
      continue;
    }
    rows.clear();
    for (std::int64_t b = 0; b < B; ++b) {
      const RowCache rc = row_cache(batch[static_cast<std::size_t>(b)], l);
      float* q = QKV + b * QKVW;
      m.norm_and_rotate(L, q, rc.position);
      cache_heads(q + QW, rc.k, KV, P, D, rc.position);
      cache_heads(q + QW + KVW, rc.v, KV, P, D, rc.position);
      const std::int64_t first = m.first_key(L, rc.position);
      rows.push_back({q, rc.k + first * D, rc.v + first * D, rc.position + 1 - first, A + b * QW});
    }
    attend_rows(rows, H, KV, P, D, scale, batch_scores(B * H * P), pool_);
    for (std::int64_t b = 0; b < B; ++b) m.gate_attention(A + b * QW, QKV + b * QKVW + QW + 2 * KVW);
    add_linear(L.o, A, L.attn_out_norm, 0);
    finish_mlp();
  }
}

void LlamaFastSession::prefill_layers(std::int64_t T) {
  const LlamaFastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t C = c.hidden_size, H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim();
  const std::int64_t QW = H * D, KVW = c.kv_width(), QKVW = m.qkv_width(), F = c.intermediate_size;
  const std::int64_t P = c.context(), pos = position_;
  const float scale = m.attention_scale();
  const RowBuffers rb = row_buffers();  // named, not bound: clang 14 cannot capture bindings
  float *X = rb.x, *Hn = rb.normed, *QKV = rb.qkv, *A = rb.attention, *GU = rb.mlp;
  // X += lin(in), through Hn (free by then) when the output is normed first (Gemma's sandwich).
  const auto add_linear = [&](const PackedLinear& lin, const float* in, const std::vector<float>& out_norm, std::int64_t ldx) {
    if (out_norm.empty()) return linear(lin, in, T, X, true, bweights_, ldx);
    linear(lin, in, T, Hn, false, bweights_, ldx);
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) m.add_output(out_norm, Hn + t * C, X + t * C);
    });
  };

  const auto norm_rows = [&](const std::vector<float>& g) {
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t)
        rms_norm_row(X + t * C, g.data(), c.rms_norm_eps, Hn + t * C, static_cast<std::size_t>(C));
    });
  };
  const auto prefill_mlp = [&](const LlamaFastLayer& L) {
    norm_rows(L.mlp_norm);
    linear(L.gate_up, Hn, T, GU, false, bweights_);
    // The gated activation per row, as step_layers() computes it; the result overwrites the row's
    // gates, which the down projection reads with a row stride of 2F.
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) m.glu_row(GU + t * 2 * F);
    });
    add_linear(L.down, GU, L.mlp_out_norm, 2 * F);
  };

  const ParallelRange blas_range = [](std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
    gemm_parallel_for(n, fn);
  };
  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const LlamaFastLayer& L = m.layers_[l];
    norm_rows(L.attn_norm);
    linear(L.qkv, Hn, T, QKV, false, bweights_);
    if (L.delta) {  // the state steps row after row; each row's heads in parallel
      const std::int64_t PW = L.delta->projection_width(), VW = L.delta->shape.value_width();
      FastDeltaState& state = delta_state(l, pos);
      for (std::int64_t t = 0; t < T; ++t) delta_token(*L.delta, QKV + t * PW, state, A + t * VW, blas_range);
      add_linear(L.o, A, L.attn_out_norm, 0);
      prefill_mlp(L);
      continue;
    }
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) m.norm_and_rotate(L, QKV + t * QKVW, pos + t);
    });
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    prefill::cache_rows(QKV + QW, QKV + QW + KVW, QKVW, T, kc, vc, KV, P, D, pos);
    prefill::causal_attention(QKV, QKVW, kc, vc, H, KV, P, D, pos, T, scale,
                             batch_scores(static_cast<std::int64_t>(prefill::attention_scratch_floats(H, pos, T))), A, QW,
                             L.sliding ? *c.sliding_window : 0);
    if (c.attn_output_gate)
      gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
        for (std::int64_t t = t0; t < t1; ++t) m.gate_attention(A + t * QW, QKV + t * QKVW + QW + 2 * KVW);
      });
    add_linear(L.o, A, L.attn_out_norm, 0);
    prefill_mlp(L);
  }
}

}  // namespace orion::engine
