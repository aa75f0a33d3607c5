#pragma once
// One head's attention for one query over the cached keys (the fast decoder's step_layers()), in
// loops compiled per ISA: with the baseline ISA's loops, attention was a noticeable part of a
// q8 decode step (docs/PERFORMANCE.md, "Smaller measurements behind the code").
#include <cstdint>
#include <span>

#include "core/thread_pool.h"

namespace orion::engine {

// out[0, D) = sum_j softmax_j(scale * dot(q, K_j)) V_j over keys j in [0, n) (n >= 1), K_j and
// V_j at K + j * D and V + j * D; `scores` is scratch of n floats.
void attend_one_query(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D,
                      float scale, float* scores, float* out);

// The cache both fast decoders keep per layer: [kv_heads, positions, head_dim], so that a key
// (value) head's run over all positions is one sequential stream. Writes the `kv_heads` heads of
// one token's row `row` ([kv_heads * head_dim]) at `position`.
void cache_heads(const float* row, float* cache, std::int64_t kv_heads, std::int64_t positions,
                 std::int64_t head_dim, std::int64_t position);

// Attention of one token's `heads` query heads (q: [heads * D]) over the first n positions of a
// layer's cache (cache_heads' layout, `positions` slots per head); query head h reads key/value
// head h / (heads / kv_heads), as grouped-query attention does (kv_heads == heads: GPT-2's).
// One head per task: each owns its slice of `out` ([heads * D]) and of `scores`
// ([heads * positions]), so threads share no cache lines but at the heads' edges.
void attend_heads(const float* q, const float* K, const float* V, std::int64_t heads, std::int64_t kv_heads,
                  std::int64_t positions, std::int64_t n, std::int64_t D, float scale, float* scores, float* out,
                  ThreadPool& pool);

// One token of each of several sequences (a batched decode step): row i's query heads q over the
// first n positions of its own cache K, V, into out. Every (row, head) pair is one task of a
// single parallel_for, with attend_heads' arithmetic; scores holds rows.size() * heads *
// positions floats.
struct AttentionRow {
  const float* q;
  const float* K;
  const float* V;
  std::int64_t n;
  float* out;
};
void attend_rows(std::span<const AttentionRow> rows, std::int64_t heads, std::int64_t kv_heads, std::int64_t positions,
                 std::int64_t D, float scale, float* scores, ThreadPool& pool);

}  // namespace orion::engine
