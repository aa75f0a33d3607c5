#pragma once
// One head's attention for one query over the cached keys (the fast decoder's step()), in
// loops compiled per ISA: at 128-token contexts, attention was about a tenth of a q8 decode
// step with the baseline ISA's loops.
#include <cstdint>

namespace orion::model {

// out[0, D) = sum_j softmax_j(scale * dot(q, K_j)) V_j over keys j in [0, n) (n >= 1), K_j and
// V_j at K + j * D and V + j * D; `scores` is scratch of n floats.
void attend_one_query(const float* q, const float* K, const float* V, std::int64_t n, std::int64_t D,
                      float scale, float* scores, float* out);

}  // namespace orion::model
