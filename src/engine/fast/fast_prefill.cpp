#include "engine/fast/fast_prefill.h"

#include <algorithm>
#include <string>

#include "core/error.h"

#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "engine/fast/fast_attention.h"

namespace orion::engine::prefill {

namespace {

using exec::cpu::gemm_parallel_for;
using exec::cpu::Transpose;

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

}  // namespace

std::int64_t checked_batched_min(std::int64_t n) {
  if (n < 1) throw Error("batched prefill: the shortest batched prompt must be at least 1 token, got " + std::to_string(n));
  return n;
}

void linear(const PackedLinear& lin, const float* X, std::int64_t T, float* Y, bool accumulate, std::vector<float>& scratch,
            std::int64_t ldx) {
  const std::int64_t N = lin.rows(), K = lin.cols();
  const float* bias = lin.bias_data();
  // The bias goes into Y first, so that the BLAS adds the product to it (beta = 1) instead of
  // a second pass over Y afterwards.
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
  exec::cpu::sgemm(Transpose::no, Transpose::yes, T, N, K, 1.0f, X, ldx > 0 ? ldx : K, f32_weights(lin, scratch), K, beta, Y, N);
}

std::size_t weight_scratch_floats(model::WeightDType dtype, const std::vector<const PackedLinear*>& lins) {
  if (dtype == model::WeightDType::f32) return 0;
  std::size_t largest = 0;
  for (const PackedLinear* lin : lins) largest = std::max(largest, static_cast<std::size_t>(lin->rows() * lin->cols()));
  return largest;
}

void cache_rows(const float* K, const float* V, std::int64_t stride, std::int64_t T, float* k_cache, float* v_cache,
                std::int64_t kv_heads, std::int64_t positions, std::int64_t D, std::int64_t pos) {
  for (std::int64_t t = 0; t < T; ++t) {
    cache_heads(K + t * stride, k_cache, kv_heads, positions, D, pos + t);
    cache_heads(V + t * stride, v_cache, kv_heads, positions, D, pos + t);
  }
}

std::size_t attention_scratch_floats(std::int64_t heads, std::int64_t pos, std::int64_t T) {
  return static_cast<std::size_t>(heads * std::min(kQueryBlock, T) * (pos + T));
}

void causal_attention(const float* Q, std::int64_t q_stride, const float* k_cache, const float* v_cache, std::int64_t heads,
                      std::int64_t kv_heads, std::int64_t positions, std::int64_t D, std::int64_t pos, std::int64_t T,
                      float scale, float* scores, float* out, std::int64_t out_stride, std::int64_t window) {
  const std::int64_t group = heads / kv_heads, P = positions;
  // One task per head over the threads, each with its own block of scores and its products on
  // one thread: a head's products (for GPT-2, [128, 64] x [64, <= 1024]) are too small to
  // split further with profit. Per block of queries: scores S = Q K^T over the keys up to the
  // block's last query (the cache before the prompt included), a masked softmax per row, then
  // S V.
  gemm_parallel_for(heads, [&](std::int64_t h0, std::int64_t h1) {
    for (std::int64_t h = h0; h < h1; ++h) {
      float* S = scores + h * std::min(kQueryBlock, T) * (pos + T);
      const float* kc = k_cache + (h / group) * P * D;
      const float* vc = v_cache + (h / group) * P * D;
      for (std::int64_t i0 = 0; i0 < T; i0 += kQueryBlock) {
        // The block's keys [k0, end): from the first its first query's window reaches.
        const std::int64_t nq = std::min(kQueryBlock, T - i0), end = pos + i0 + nq;
        const std::int64_t k0 = window > 0 ? std::max<std::int64_t>(0, pos + i0 + 1 - window) : 0, nk = end - k0;
        exec::cpu::sgemm(Transpose::no, Transpose::yes, nq, nk, D, scale, Q + i0 * q_stride + h * D, q_stride, kc + k0 * D, D,
                         0.0f, S, nk);
        for (std::int64_t r = 0; r < nq; ++r) {
          float* s = S + r * nk;
          const std::int64_t seen = pos + i0 + r + 1 - k0;  // keys [from, seen) of the block's this query attends to
          const std::int64_t from = window > 0 ? std::max<std::int64_t>(0, seen - window) : 0;
          std::fill(s, s + from, 0.0f);
          exec::cpu::softmax_row(s + from, seen - from);
          std::fill(s + seen, s + nk, 0.0f);
        }
        exec::cpu::sgemm(Transpose::no, Transpose::no, nq, D, nk, 1.0f, S, nk, vc + k0 * D, D, 0.0f,
                         out + i0 * out_stride + h * D, out_stride);
      }
    }
  });
}

double attention_flops(std::int64_t cached, std::int64_t tokens, std::int64_t width) {
  double keys = 0;  // sum over queries of the keys their block's products cover
  for (std::int64_t i0 = 0; i0 < tokens; i0 += kQueryBlock) {
    const std::int64_t nq = std::min(kQueryBlock, tokens - i0);
    keys += static_cast<double>(nq) * static_cast<double>(cached + i0 + nq);
  }
  return 2 * 2 * keys * static_cast<double>(width);
}

}  // namespace orion::engine::prefill
