// Batched prefill of the fast GPT-2 engine: the whole prompt at once, as matrix products
// through oneDNN's sgemm (exec/cpu/gemm), where step_layers() streams every weight once per token. A
// prompt of T tokens reads each weight once instead of T times, so the work becomes compute
// bound; docs/PERFORMANCE.md ("Current figures") has the figures against the machine's FMA peak.
//
// The activations are [T, width] row-major. The weights stay as PackedLinear stores them,
// [out, in] rows, which the BLAS takes as a transposed B operand; f16 and q8 matrices are
// expanded to f32 one at a time into a scratch buffer, since sgemm computes in f32 only.
// The pieces Llama's prefill shares are in engine/fast/fast_prefill.h. K and V rows go into the session's cache exactly where step_layers() puts them, so decoding
// continues from a batched prompt as from a token-by-token one.
//
// batch_layers is the same products over one token of each of several sessions (a server's
// concurrent requests, FastSession::decode_batch), each row attending over its own cache.
#include <cmath>

#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "engine/fast/fast_attention.h"
#include "engine/fast/fast_prefill.h"
#include "engine/fast/fast_rows.h"
#include "engine/fast/gpt2_fast.h"

namespace orion::engine {

using exec::cpu::gemm_parallel_for;
using prefill::linear;

double Gpt2FastSession::batched_prefill_flops(const model::Gpt2Config& c, std::int64_t cached, std::int64_t tokens) {
  const auto T = static_cast<double>(tokens), C = static_cast<double>(c.n_embd), F = static_cast<double>(c.hidden());
  const double linears = 2 * T * (C * 3 * C + C * C + 2 * C * F);
  const double attention = prefill::attention_flops(cached, tokens, c.n_embd);  // all heads: D * H = C
  return static_cast<double>(c.n_layer) * (linears + attention) + 2 * C * static_cast<double>(c.vocab_size);
}

void Gpt2FastSession::batch_layers(std::span<const BatchRow> batch) {
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t C = c.n_embd, H = c.n_head, D = C / H, P = c.n_positions;
  const auto B = static_cast<std::int64_t>(batch.size());
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const RowBuffers rb = row_buffers();  // named, not bound: clang 14 cannot capture bindings
  float *X = rb.x, *Hn = rb.normed, *QKV = rb.qkv, *A = rb.attention, *M = rb.mlp;
  const auto norm_rows = [&](const std::vector<float>& g, const std::vector<float>& b) {
    for (std::int64_t t = 0; t < B; ++t) layer_norm_row(X + t * C, g.data(), b.data(), eps, Hn + t * C, static_cast<std::size_t>(C));
  };
  std::vector<AttentionRow> rows;
  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const Gpt2FastLayer& L = m.layers_[l];
    norm_rows(L.ln1_g, L.ln1_b);
    batch_linear(L.attn, Hn, B, QKV, false);
    rows.clear();
    for (std::int64_t b = 0; b < B; ++b) {
      const RowCache rc = row_cache(batch[static_cast<std::size_t>(b)], l);
      const float* q = QKV + b * 3 * C;
      cache_heads(q + C, rc.k, H, P, D, rc.position);
      cache_heads(q + 2 * C, rc.v, H, P, D, rc.position);
      rows.push_back({q, rc.k, rc.v, rc.position + 1, A + b * C});
    }
    attend_rows(rows, H, H, P, D, scale, batch_scores(B * H * P), pool_);
    batch_linear(L.proj, A, B, X, true);
    norm_rows(L.ln2_g, L.ln2_b);
    batch_linear(L.fc, Hn, B, M, false, 0, exec::cpu::Activation::gelu);
    batch_linear(L.mlp_proj, M, B, X, true);
  }
}

void Gpt2FastSession::prefill_layers(std::int64_t T) {
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const std::int64_t C = c.n_embd, H = c.n_head, D = C / H, pos = position_;
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const RowBuffers rb = row_buffers();  // named, not bound: clang 14 cannot capture bindings
  float *X = rb.x, *Hn = rb.normed, *QKV = rb.qkv, *A = rb.attention, *M = rb.mlp;

  const auto norm_rows = [&](const std::vector<float>& g, const std::vector<float>& b) {
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t)
        layer_norm_row(X + t * C, g.data(), b.data(), eps, Hn + t * C, static_cast<std::size_t>(C));
    });
  };

  for (std::size_t l = 0; l < m.layers_.size(); ++l) {
    const Gpt2FastLayer& L = m.layers_[l];
    norm_rows(L.ln1_g, L.ln1_b);
    linear(L.attn, Hn, T, QKV, false, bweights_);
    // The cache is [head, position, head_dim] (fast_session.h), as step_layers() writes it.
    const std::int64_t P = c.n_positions;
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    prefill::cache_rows(QKV + C, QKV + 2 * C, 3 * C, T, kc, vc, H, P, D, pos);
    prefill::causal_attention(QKV, 3 * C, kc, vc, H, H, P, D, pos, T, scale,
                             batch_scores(static_cast<std::int64_t>(prefill::attention_scratch_floats(H, pos, T))), A, C);
    linear(L.proj, A, T, X, true, bweights_);
    norm_rows(L.ln2_g, L.ln2_b);
    linear(L.fc, Hn, T, M, false, bweights_);
    const std::int64_t F = L.fc.rows();
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      exec::cpu::gelu_tanh_rows(M + t0 * F, (t1 - t0) * F);
    });
    linear(L.mlp_proj, M, T, X, true, bweights_);
  }
}

}  // namespace orion::engine
