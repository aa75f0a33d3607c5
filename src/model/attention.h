#pragma once
// Scaled dot-product attention of `heads` heads over token-major rows, written the way the ANE
// compiler's lower_layout recognises (heads split on the channel axis: reshape [rows, H, D],
// transpose to [H, rows, D]); GPT-2's blocks and the Llama graph's ANE form share it.
#include <cstdint>
#include <optional>

#include "ir/builder.h"

namespace orion::model {

// q [batch * T, H * D], k and v [batch * S, H * D] (S = T for a batch of windows), mask an
// additive [T, S] (0 where a query may look, -inf where not). Returns [batch * T, H * D].
ir::Value multi_head_attention(ir::Builder& b, ir::Value q, ir::Value k, ir::Value v, ir::Value mask,
                               std::int64_t heads, std::int64_t batch);

// The attention of T rows (q, k, v [T, H * D]), each over `past` cached positions (past_k,
// past_v [past, H * D]) and its own key, without joining the cache and the rows into one axis:
// the ANE form of a step whose cache stays on the device (the join is a concat, which the ANE
// path refuses, ANE004; kept apart, the cache is a kernel input the runtime keeps resident and
// writes a column of per row and step). The softmax over the union is written out:
// m = max(max(s_past), s_self) (max(a, b) = b + relu(a - b): no maximum op), then
// (exp(s_past - m) @ v_past + exp(s_self - m) * v) / (sum exp(s_past - m) + exp(s_self - m)).
// mask is an additive [T, past + 1]: its first `past` columns cover the cache, the last a row's
// own key. One decode step is T = 1; a batch of sequences is one row each, each row's mask
// opening its own part of the cache (the rows never see each other).
// With `rows_mask` (an additive [T, T], a chunk's causal mask, a constant): the rows are a chunk
// of one sequence and see each other's keys through it (a product of the rows, as prefill's
// attention), and `mask` is [T, past], the cache alone. Returns [T, H * D].
ir::Value attention_over_cache(ir::Builder& b, ir::Value q, ir::Value past_k, ir::Value k, ir::Value past_v,
                               ir::Value v, ir::Value mask, std::int64_t heads,
                               std::optional<ir::Value> rows_mask = std::nullopt);

}  // namespace orion::model
