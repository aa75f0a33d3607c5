#include "model/decoder_graph.h"

#include "core/error.h"

namespace orion::model {

void check_graph_options(const DecoderGraphOptions& o, std::int64_t context, const std::string& arch) {
  if (o.sequences > 1) {
    if (!o.ane_form || o.seq != o.sequences || o.past % o.sequences != 0 || o.past / o.sequences + 1 > context)
      throw Error(arch + " graph: a batched step of " + std::to_string(o.sequences) + " sequences needs the ANE form, one row each and " +
                  std::to_string(o.sequences) + " equal caches that fit the context of " + std::to_string(context) + ", not " +
                  std::to_string(o.seq) + " rows after " + std::to_string(o.past) + " slots");
    return;
  }
  // The ANE form's chunk after a cache: its rows take cache slots, so the cache bounds the
  // positions (the rows after the last slot are padding the host drops).
  if (o.ane_form && o.past > 0 && o.seq > 1) {
    if (o.seq > o.past || o.past + 1 > context)
      throw Error(arch + " graph: a chunk of " + std::to_string(o.seq) + " rows after a cache of " + std::to_string(o.past) +
                  " slots does not fit the context of " + std::to_string(context));
    return;
  }
  if (o.seq <= 0 || o.past < 0 || o.past + o.seq > context)
    throw Error(arch + " graph: a window of " + std::to_string(o.seq) + " after " + std::to_string(o.past) +
                " positions does not fit the context of " + std::to_string(context));
  if (o.batch < 1 || (o.batch > 1 && o.past > 0))
    throw Error(arch + " graph: a batch of " + std::to_string(o.batch) + " windows (batch > 1 only without past positions)");
  if (o.ane_form && o.batch > 1)
    throw Error(arch + " graph: the ANE form holds one window (the ANE's layout is [1, C, 1, S])");
  if (o.loss && o.last_only) throw Error(arch + " graph: the loss needs the logits of every position, not last_only");
}

void add_loss_output(ir::Builder& b, ir::Value logits) {
  const std::int64_t rows = b.shape(logits)[0];
  ir::Value targets = b.input("targets", DType::i32, {rows});
  ir::Value weights = b.input("loss_weights", DType::f32, {rows});
  b.output(b.name(b.reduce_sum(b.mul(b.softmax_cross_entropy(logits, targets), weights), {0}), "loss"));
}

}  // namespace orion::model
