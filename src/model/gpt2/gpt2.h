#pragma once
// The GPT-2 model as IR graphs: token and learned position embeddings, n_layer blocks, the
// final norm and the head tied to the token embedding. One builder serves prefill (a window
// from position 0, causal mask carried in the graph) and decode (a window after `past` cached
// positions, whose keys and values are inputs and whose mask is an input).
//
// Inputs:  tokens i32[batch * seq], positions i32[batch * seq] (`batch` windows of `seq` tokens,
//          one after the other; attention stays within each window);
//          with past > 0 also mask f32[seq, past + seq], past_k.L and past_v.L f32[past, n_embd];
//          with loss also targets i32[batch * seq].
// Outputs: logits f32[batch * seq, vocab] (f32[1, vocab] with last_only), then k.L and v.L
//          f32[batch * seq, n_embd] for every layer L: this window's keys and values for the cache.
//          With loss instead the single output loss f32[]: the mean over the batch * seq rows of
//          softmax_cross_entropy(logits, targets), the training graph.
//
// The batch is folded into the rows of every projection ([batch * seq, n_embd] @ W), so that
// training's products are tall enough for the matrix-product library; only attention sees the
// windows apart, as heads [batch, n_head, seq, head_dim].
#include <cstdint>

#include "ir/graph.h"
#include "model/decoder_graph.h"
#include "model/gpt2/gpt2_config.h"

namespace orion::model {

using Gpt2GraphOptions = DecoderGraphOptions;

ir::Graph gpt2_graph(const Gpt2Config& config, const Gpt2GraphOptions& options);

}  // namespace orion::model
