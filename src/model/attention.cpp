#include "model/attention.h"

#include <cmath>

namespace orion::model {

ir::Value multi_head_attention(ir::Builder& b, ir::Value q, ir::Value k, ir::Value v, ir::Value mask,
                               std::int64_t heads, std::int64_t batch) {
  const std::int64_t B = batch, H = heads, C = b.shape(q)[1], D = C / H, T = b.shape(q)[0] / B;
  auto split = [&](ir::Value t) {  // [n, C] -> [H, n, D]; a batch: [B * n, C] -> [B, H, n, D]
    const std::int64_t n = b.shape(t)[0] / B;
    if (B > 1) return b.transpose(b.reshape(t, {B, n, H, D}), {0, 2, 1, 3});
    return b.transpose(b.reshape(t, {n, H, D}), {1, 0, 2});
  };
  // One statement each: the order the nodes are made in is the graph's, on every compiler.
  ir::Value qh = split(q);
  ir::Value kh = split(k);
  ir::Value scores = b.mul(b.matmul(qh, kh, false, true),
                           b.scalar(static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)))));
  ir::Value probs = b.softmax(b.add(scores, mask), -1);
  ir::Value out = b.matmul(probs, split(v));
  return B > 1 ? b.reshape(b.transpose(out, {0, 2, 1, 3}), {B * T, C}) : b.reshape(b.transpose(out, {1, 0, 2}), {T, C});
}

}  // namespace orion::model
