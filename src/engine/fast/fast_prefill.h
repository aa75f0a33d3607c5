#pragma once
// Pieces both fast engines' batched prefills share (gpt2_fast_prefill.cpp,
// llama_fast_prefill.cpp): linear layers over a whole prompt as sgemm calls on PackedLinear's
// [out, in] rows, and causal (grouped-query) attention over the prompt and the cache before it,
// in the decoders' cache layout (fast_attention.h's cache_heads). Activations are [T, width]
// row-major. Every parallel loop runs on the BLAS's own threads (exec/cpu/gemm.h's
// gemm_parallel_for), not on a session's pool: OpenMP's threads spin for a while after each
// product, so handing the cores to the pool between products made the two sets compete.
#include <cstdint>
#include <vector>

#include "engine/fast/packed_linear.h"

namespace orion::engine::prefill {

// The shortest prompt the fast sessions run batched by default (docs/PERFORMANCE.md, "Choices").
inline constexpr std::int64_t kDefaultBatchedMin = 16;

// `n` as the sessions' set_batched_prefill_min takes it; throws orion::Error when n < 1.
std::int64_t checked_batched_min(std::int64_t n);

// Queries per attention block. Each block's scores cover only the keys up to its last query,
// so the products skip most of the causally masked upper triangle (for T = 512 they compute
// 62.5% of the full square instead of 100%, against the 50% that is needed).
inline constexpr std::int64_t kQueryBlock = 128;

// Y[T, out] = X[T, in] W^T + b, or Y += X W^T + b when `accumulate` (the residual additions);
// X's rows are `ldx` floats apart (0: in). f16 and q8 matrices are expanded to f32 into `scratch` (at least rows * cols floats) first,
// since sgemm computes in f32 only.
void linear(const PackedLinear& lin, const float* X, std::int64_t T, float* Y, bool accumulate, std::vector<float>& scratch,
            std::int64_t ldx = 0);

// Floats of the scratch `linear` needs for `lins` in `dtype`: 0 for f32 (its rows are used as
// they are), else the largest matrix.
std::size_t weight_scratch_floats(model::WeightDType dtype, const std::vector<const PackedLinear*>& lins);

// Writes the K and V rows of T tokens (token t's kv_heads * D keys at K + t * stride, values at
// V + t * stride) into a layer's caches at positions pos.. pos + T - 1, where step_layers() puts them.
void cache_rows(const float* K, const float* V, std::int64_t stride, std::int64_t T, float* k_cache, float* v_cache,
                std::int64_t kv_heads, std::int64_t positions, std::int64_t D, std::int64_t pos);

// Causal attention of T queries at positions pos.. pos + T - 1 (query t's `heads` heads at
// Q + t * q_stride) over the cache's first pos + T positions (cache_rows' layout, `positions`
// slots per head); query head h reads key/value head h / (heads / kv_heads). Head h of query t
// goes to out + t * out_stride + h * D. `scores` holds attention_scratch_floats(heads, pos, T).
// With `window` > 0 (a sliding-window layer) a query sees only the keys less than `window`
// positions before it.
void causal_attention(const float* Q, std::int64_t q_stride, const float* k_cache, const float* v_cache, std::int64_t heads,
                      std::int64_t kv_heads, std::int64_t positions, std::int64_t D, std::int64_t pos, std::int64_t T,
                      float scale, float* scores, float* out, std::int64_t out_stride, std::int64_t window = 0);
// The scores' scratch of `T` queries after `pos` cached positions: a block of queries by the keys
// up to the last, per head (sized by what is attended, not the context, so that a short
// prompt or a chunk touches little memory).
std::size_t attention_scratch_floats(std::int64_t heads, std::int64_t pos, std::int64_t T);

// FLOPs (2 per multiply-add) of causal_attention's products for one layer: Q K^T and S V over
// the keys each query block covers (the masked part inside a block included), `width` =
// heads * D.
double attention_flops(std::int64_t cached, std::int64_t tokens, std::int64_t width);

}  // namespace orion::engine::prefill
