#include "model/gpt2.h"

#include "core/error.h"
#include "ir/builder.h"

namespace orion::model {

ir::Graph gpt2_graph(const Gpt2Config& c, const Gpt2GraphOptions& o) {
  if (o.seq <= 0 || o.past < 0 || o.past + o.seq > c.n_positions)
    throw Error("gpt2 graph: a window of " + std::to_string(o.seq) + " after " + std::to_string(o.past) +
                " positions does not fit the context of " + std::to_string(c.n_positions));
  if (o.batch < 1 || (o.batch > 1 && o.past > 0))
    throw Error("gpt2 graph: a batch of " + std::to_string(o.batch) + " windows (batch > 1 only without past positions)");
  if (o.loss && o.last_only) throw Error("gpt2 graph: the loss needs the logits of every position, not last_only");
  const std::int64_t T = o.seq, C = c.n_embd, rows = o.batch * o.seq;
  ir::Builder b(o.loss ? "gpt2_train" : o.past > 0 ? "gpt2_decode" : "gpt2_prefill");
  ir::Value tokens = b.input("tokens", DType::i32, {rows});
  ir::Value positions = b.input("positions", DType::i32, {rows});
  ir::Value wte = b.param("wte.weight", DType::f32, {c.vocab_size, C});
  ir::Value wpe = b.param("wpe.weight", DType::f32, {c.n_positions, C});
  ir::Value x = b.name(b.add(b.gather(wte, tokens), b.gather(wpe, positions)), "embed");

  AttentionContext ctx;
  ctx.mask = o.past > 0 ? b.input("mask", DType::f32, {T, o.past + T}) : causal_mask(b, T);
  Gpt2BlockShape shape = c.block_shape(T);
  shape.batch = o.batch;
  std::vector<ir::Value> cache_out;
  for (int layer = 0; layer < c.n_layer; ++layer) {
    const std::string l = std::to_string(layer);
    if (o.past > 0) {
      ctx.past_k = b.input("past_k." + l, DType::f32, {o.past, C});
      ctx.past_v = b.input("past_v." + l, DType::f32, {o.past, C});
    }
    BlockOutputs out = gpt2_block(b, x, shape, layer, ctx);
    cache_out.push_back(b.name(out.k, "k." + l));
    cache_out.push_back(b.name(out.v, "v." + l));
    x = out.y;
  }
  if (o.last_only && T > 1) x = b.slice(x, {T - 1, 0}, {T, C});
  x = b.layer_norm(x, b.param("ln_f.weight", DType::f32, {C}), b.param("ln_f.bias", DType::f32, {C}),
                   c.layer_norm_epsilon);
  ir::Value logits = b.name(b.matmul(x, wte, false, true), "logits");  // head tied to wte
  if (o.loss) {
    ir::Value targets = b.input("targets", DType::i32, {rows});
    b.output(b.name(b.reduce_mean(b.softmax_cross_entropy(logits, targets), {0}), "loss"));
    return b.finish();
  }
  b.output(logits);
  for (ir::Value v : cache_out) b.output(v);
  return b.finish();
}

}  // namespace orion::model
