#pragma once
// Scaled dot-product attention of `heads` heads over token-major rows, written the way the ANE
// compiler's lower_layout recognises (heads split on the channel axis: reshape [rows, H, D],
// transpose to [H, rows, D]); GPT-2's blocks and the Llama graph's ANE form share it.
#include <cstdint>

#include "ir/builder.h"

namespace orion::model {

// q [batch * T, H * D], k and v [batch * S, H * D] (S = T for a batch of windows), mask an
// additive [T, S] (0 where a query may look, -inf where not). Returns [batch * T, H * D].
ir::Value multi_head_attention(ir::Builder& b, ir::Value q, ir::Value k, ir::Value v, ir::Value mask,
                               std::int64_t heads, std::int64_t batch);

}  // namespace orion::model
