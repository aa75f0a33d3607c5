#pragma once
// What every architecture's graph builder (model/gpt2/gpt2.h, model/llama/llama.h) shares: the options
// that choose a graph (a window after `past` cached positions, or `batch` windows side by side
// for training, with or without the loss), their checks, and the training graph's loss head.
#include <cstdint>
#include <string>

#include "ir/builder.h"

namespace orion::model {

struct DecoderGraphOptions {
  std::int64_t seq = 1;
  std::int64_t past = 0;
  bool last_only = false;  // logits of the last position only (generation needs no more)
  std::int64_t batch = 1;  // windows side by side; > 1 only for prefill (past == 0)
  bool loss = false;       // the training graph: input targets, output loss
  // The same function in ops the ANE compiler lowers (Llama's; GPT-2's graph has that form
  // already): see model/llama/llama.h. One window only; with the loss, what training on an ANE
  // device differentiates. A step after past > 0 cached positions keeps its cache apart from
  // its rows (model/attention.h, attention_over_cache), so that the cache can stay on the device.
  bool ane_form = false;
  // A batched decode step (ANE form): the window's `seq` rows are one token each of as many
  // sequences, whose caches lie side by side in the `past` slots (past / sequences each); the
  // mask opens each row's own part. 1: one sequence, whose `seq` > 1 rows after `past` in the
  // ANE form are a chunk of a prompt (model/attention.h: rows_mask causal, mask [seq, past]).
  std::int64_t sequences = 1;
  // The ANE form's residual stream divided by this (a power of two, so exactly): the embedding
  // and every addition to the stream scaled by its inverse. Every norm that reads the stream is
  // an RMSNorm, which a scale leaves alone (but for its epsilon, negligible at the magnitudes
  // that need scaling), so the logits are the same; fp16 then holds a stream that would pass
  // its 65,504 (Gemma 3's). Llama family only.
  double residual_scale = 1;
};

// Throws orion::Error, naming `arch`, for options no graph has: a window that does not fit the
// context, a batch with past positions, the loss of the last position only.
void check_graph_options(const DecoderGraphOptions& options, std::int64_t context, const std::string& arch);

// The training graph's end: inputs targets i32[rows] (rows = logits' rows) and loss_weights
// f32[rows], and the single output `loss` f32[], the sum over the rows of
// softmax_cross_entropy(logits, targets) * loss_weights. Weights of 1/rows give the mean; the
// trainer gives a masked or padded row 0 and every trained row 1 / (the step's trained rows),
// so that the loss is the mean over the tokens trained on and nothing else has a gradient.
void add_loss_output(ir::Builder& b, ir::Value logits);

}  // namespace orion::model
