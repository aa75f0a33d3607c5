// Batched prefill of the fast GPT-2 engine: the whole prompt at once, as matrix products
// through oneDNN's sgemm (exec/cpu/gemm), where step() streams every weight once per token. A
// prompt of T tokens reads each weight once instead of T times, so the work becomes compute
// bound; docs/PERFORMANCE.md ("Prefill") has the figures against the machine's FMA peak.
//
// The activations are [T, width] row-major. The weights stay as PackedLinear stores them,
// [out, in] rows, which the BLAS takes as a transposed B operand; f16 and q8 matrices are
// expanded to f32 one at a time into a scratch buffer, since sgemm computes in f32 only.
// K and V rows go into the session's cache exactly where step() puts them, so decoding
// continues from a batched prompt as from a token-by-token one.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "model/gpt2_fast.h"
#include "model/fast_rows.h"

namespace orion::model {

namespace {

using exec::cpu::Transpose;

// Queries per attention block. Each block's scores cover only the keys up to its last query,
// so the products skip most of the causally masked upper triangle (for T = 512 they compute
// 62.5% of the full square instead of 100%, against the 50% that is needed).
constexpr std::int64_t kQueryBlock = 128;

// Every parallel loop of the prefill runs on the BLAS's own threads, not on the session's pool:
// OpenMP's threads spin for a while after each product, so handing the cores to the pool
// between products made the two sets of threads compete for them.
using exec::cpu::gemm_parallel_for;

// W of `lin` as f32 [out, in] rows: the packed rows themselves, or (f16, q8) expanded into
// `scratch`, in parallel, once per prefill.
const float* f32_weights(const PackedLinear& lin, std::vector<float>& scratch) {
  if (const float* w = lin.f32_data()) return w;
  const std::int64_t cols = lin.cols();
  gemm_parallel_for(lin.rows(), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) lin.row(r, scratch.data() + r * cols);
  });
  return scratch.data();
}

// Y[T, out] = X[T, in] W^T + b, or Y += X W^T + b when `accumulate` (the residual additions).
// The bias goes into Y first, so that the BLAS adds the product to it (beta = 1) instead of a
// second pass over Y afterwards.
void linear(const PackedLinear& lin, const float* X, std::int64_t T, float* Y, bool accumulate,
            std::vector<float>& scratch) {
  const std::int64_t N = lin.rows(), K = lin.cols();
  const float* bias = lin.bias_data();
  if (bias) {
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        float* y = Y + t * N;
        if (accumulate)
          for (std::int64_t i = 0; i < N; ++i) y[i] += bias[i];
        else
          std::copy_n(bias, N, y);
      }
    });
  }
  const float beta = bias || accumulate ? 1.0f : 0.0f;
  exec::cpu::sgemm(Transpose::no, Transpose::yes, T, N, K, 1.0f, X, K, f32_weights(lin, scratch), K, beta, Y, N);
}

}  // namespace

void Gpt2FastSession::set_batched_prefill_min(std::int64_t n) {
  if (n < 1) throw Error("batched prefill: the shortest batched prompt must be at least 1 token, got " + std::to_string(n));
  batched_min_ = n;
}

double Gpt2FastSession::batched_prefill_flops(const Gpt2Config& c, std::int64_t cached, std::int64_t tokens) {
  const auto T = static_cast<double>(tokens), C = static_cast<double>(c.n_embd), F = static_cast<double>(c.hidden());
  const double linears = 2 * T * (C * 3 * C + C * C + 2 * C * F);
  double keys = 0;  // sum over queries of the keys their block's products cover
  for (std::int64_t i0 = 0; i0 < tokens; i0 += kQueryBlock) {
    const std::int64_t nq = std::min(kQueryBlock, tokens - i0);
    keys += static_cast<double>(nq) * static_cast<double>(cached + i0 + nq);
  }
  const double attention = 2 * 2 * keys * C;  // Q K^T and S V, all heads: D * H = C
  return static_cast<double>(c.n_layer) * (linears + attention) + 2 * C * static_cast<double>(c.vocab_size);
}

void Gpt2FastSession::prefill_scratch() {
  if (!bx_.empty()) return;
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const auto P = static_cast<std::size_t>(c.n_positions), C = static_cast<std::size_t>(c.n_embd);
  bx_.resize(P * C);
  bh_.resize(P * C);
  bqkv_.resize(P * 3 * C);
  batt_.resize(P * C);
  bmlp_.resize(P * static_cast<std::size_t>(c.hidden()));
  bscores_.resize(static_cast<std::size_t>(c.n_head * std::min<std::int64_t>(kQueryBlock, c.n_positions)) * P);
  if (m.dtype() != WeightDType::f32) {
    std::size_t largest = 0;
    for (const auto& L : m.layers_)
      for (const PackedLinear* lin : {&L.attn, &L.proj, &L.fc, &L.mlp_proj})
        largest = std::max(largest, static_cast<std::size_t>(lin->rows() * lin->cols()));
    bweights_.resize(largest);
  }
}

void Gpt2FastSession::prefill_batched(std::span<const std::int32_t> tokens) {
  prefill_scratch();
  exec::cpu::set_gemm_threads(pool_.size());
  const Gpt2FastModel& m = *model_;
  const auto& c = m.config();
  const auto T = static_cast<std::int64_t>(tokens.size());
  const std::int64_t C = c.n_embd, H = c.n_head, D = C / H, pos = position_;
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  float* X = bx_.data();
  float* Hn = bh_.data();
  float* QKV = bqkv_.data();
  float* A = batt_.data();
  float* M = bmlp_.data();

  gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      float* x = X + t * C;
      m.head_.row(tokens[static_cast<std::size_t>(t)], x);
      const float* p = m.wpe_.data() + (pos + t) * C;
      for (std::int64_t i = 0; i < C; ++i) x[i] += p[i];
    }
  });
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
    // The cache is [head, position, head_dim] (gpt2_fast.h), as step() writes it.
    const std::int64_t P = c.n_positions;
    float* kc = k_cache_[l].get();
    float* vc = v_cache_[l].get();
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < H; ++h) {
        std::memcpy(kc + (h * P + pos + t) * D, QKV + t * 3 * C + C + h * D, static_cast<std::size_t>(D) * sizeof(float));
        std::memcpy(vc + (h * P + pos + t) * D, QKV + t * 3 * C + 2 * C + h * D, static_cast<std::size_t>(D) * sizeof(float));
      }
    // Causal attention, one task per head over the threads, each with its own block of
    // scores and its products on one thread: a head's products (for GPT-2, [128, 64] x
    // [64, <= 1024]) are too small to split further with profit. Per block of queries: scores
    // S = Q K^T over the keys up to the block's last query (the cache before the prompt
    // included), a masked softmax per row, then S V.
    gemm_parallel_for(H, [&](std::int64_t h0, std::int64_t h1) {
      for (std::int64_t h = h0; h < h1; ++h) {
        float* S = bscores_.data() + h * std::min(kQueryBlock, c.n_positions) * c.n_positions;
        for (std::int64_t i0 = 0; i0 < T; i0 += kQueryBlock) {
          const std::int64_t nq = std::min(kQueryBlock, T - i0), nk = pos + i0 + nq;
          exec::cpu::sgemm(Transpose::no, Transpose::yes, nq, nk, D, scale, QKV + i0 * 3 * C + h * D, 3 * C, kc + h * P * D, D,
                           0.0f, S, nk);
          for (std::int64_t r = 0; r < nq; ++r) {
            float* s = S + r * nk;
            const std::int64_t seen = pos + i0 + r + 1;  // keys this query attends to
            exec::cpu::softmax_row(s, seen);
            std::fill(s + seen, s + nk, 0.0f);
          }
          exec::cpu::sgemm(Transpose::no, Transpose::no, nq, D, nk, 1.0f, S, nk, vc + h * P * D, D, 0.0f, A + i0 * C + h * D, C);
        }
      }
    });
    linear(L.proj, A, T, X, true, bweights_);
    norm_rows(L.ln2_g, L.ln2_b);
    linear(L.fc, Hn, T, M, false, bweights_);
    const std::int64_t F = L.fc.rows();
    gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      exec::cpu::gelu_tanh_rows(M + t0 * F, (t1 - t0) * F);
    });
    linear(L.mlp_proj, M, T, X, true, bweights_);
  }
  position_ += T;
  // Only the last token's logits are wanted: the head runs once, as a GEMV, as in step().
  layer_norm_row(X + (T - 1) * C, m.lnf_g_.data(), m.lnf_b_.data(), eps, h_.data(), static_cast<std::size_t>(C));
  m.head_.apply(h_.data(), logits_.data(), pool_, isa_);
}

}  // namespace orion::model
