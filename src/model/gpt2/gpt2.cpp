#include "model/gpt2/gpt2.h"

#include "ir/builder.h"

namespace orion::model {

ir::Graph gpt2_graph(const Gpt2Config& c, const Gpt2GraphOptions& o) {
  check_graph_options(o, c.n_positions, "gpt2");
  const std::int64_t T = o.seq, C = c.n_embd, rows = o.batch * o.seq;
  ir::Builder b(o.loss ? "gpt2_train" : o.past > 0 ? "gpt2_decode" : "gpt2_prefill");
  ir::Value tokens = b.input("tokens", DType::i32, {rows});
  ir::Value positions = b.input("positions", DType::i32, {rows});
  ir::Value wte = b.param("wte.weight", DType::f32, {c.vocab_size, C});
  ir::Value wpe = b.param("wpe.weight", DType::f32, {c.n_positions, C});
  ir::Value x = b.name(b.add(b.gather(wte, tokens), b.gather(wpe, positions)), "embed");

  AttentionContext ctx;
  // As Llama's (model/llama/llama.cpp): the ANE form's rows see the cache and their own key, or
  // a chunk's each other through a causal constant.
  const bool chunk = o.ane_form && o.past > 0 && T > 1 && o.sequences == 1;
  if (chunk) ctx.rows_mask = causal_mask(b, T);
  ctx.mask = o.past > 0 ? b.input("mask", DType::f32, {T, o.past + (o.ane_form ? (chunk ? 0 : 1) : T)}) : causal_mask(b, T);
  ctx.cache_apart = o.ane_form;  // model/attention.h: a step with its cache on the ANE
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
    x = b.name(out.y, "layer_out." + l);  // where a layer ends (ProgramSpec::layer_ends)
  }
  if (o.last_only && T > 1) x = b.slice(x, {T - 1, 0}, {T, C});
  x = b.layer_norm(x, b.param("ln_f.weight", DType::f32, {C}), b.param("ln_f.bias", DType::f32, {C}),
                   c.layer_norm_epsilon);
  ir::Value logits = b.name(b.matmul(x, wte, false, true), "logits");  // head tied to wte
  if (o.loss) {
    add_loss_output(b, logits);
    return b.finish();
  }
  b.output(logits);
  for (ir::Value v : cache_out) b.output(v);
  return b.finish();
}

}  // namespace orion::model
