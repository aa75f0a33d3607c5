#include "model/attention.h"

#include <cmath>

#include "core/error.h"

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

ir::Value attention_over_cache(ir::Builder& b, ir::Value q, ir::Value past_k, ir::Value k, ir::Value past_v,
                               ir::Value v, ir::Value mask, std::int64_t heads, std::optional<ir::Value> rows_mask) {
  const std::int64_t H = heads, C = b.shape(q)[1], D = C / H, P = b.shape(past_k)[0], T = b.shape(q)[0];
  const bool chunk = rows_mask.has_value();
  if (b.shape(k)[0] != T || b.shape(mask)[0] != T || b.shape(mask)[1] != P + (chunk ? 0 : 1) ||
      (chunk && (b.shape(*rows_mask)[0] != T || b.shape(*rows_mask)[1] != T)))
    throw Error("attention_over_cache: " + std::to_string(T) + " rows need keys of as many rows and a mask of [" +
                std::to_string(T) + ", " + std::to_string(P + (chunk ? 0 : 1)) + "]" + (chunk ? " and rows' mask of [T, T]" : ""));
  auto split = [&](ir::Value t) { return b.transpose(b.reshape(t, {b.shape(t)[0], H, D}), {1, 0, 2}); };
  const ir::Value scale = b.scalar(static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))));
  // One statement each, as above: the graph's node order is the statements' order.
  ir::Value qh = split(q);
  ir::Value pk = split(past_k);
  ir::Value s_past = b.add(b.mul(b.matmul(qh, pk, false, true), scale), chunk ? mask : b.slice(mask, {0, 0}, {T, P}));  // [H, T, P]
  ir::Value kh = split(k);
  // Own keys: a row's dot product with its own (one row, or rows that never see each other),
  // or a chunk's product of its rows under the causal mask.
  ir::Value s_self = chunk ? b.add(b.mul(b.matmul(qh, kh, false, true), scale), *rows_mask)
                           : b.add(b.mul(b.reduce_sum(b.mul(qh, kh), {-1}, true), scale), b.slice(mask, {0, P}, {T, P + 1}));
  ir::Value m_past = b.reduce_max(s_past, {-1}, true);                       // [H, T, 1]
  ir::Value m_self = chunk ? b.reduce_max(s_self, {-1}, true) : s_self;
  ir::Value m = b.add(m_self, b.relu(b.sub(m_past, m_self)));               // max(m_past, m_self)
  ir::Value e_past = b.exp(b.sub(s_past, m));
  ir::Value e_self = b.exp(b.sub(s_self, m));
  ir::Value den = b.add(b.reduce_sum(e_past, {-1}, true), chunk ? b.reduce_sum(e_self, {-1}, true) : e_self);
  ir::Value pv = split(past_v);
  ir::Value vh = split(v);
  ir::Value num = b.add(b.matmul(e_past, pv), chunk ? b.matmul(e_self, vh) : b.mul(e_self, vh));  // [H, T, D]
  return b.reshape(b.transpose(b.div(num, den), {1, 0, 2}), {T, C});
}

}  // namespace orion::model
