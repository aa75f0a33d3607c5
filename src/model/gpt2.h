#pragma once
// The GPT-2 model as IR graphs: token and learned position embeddings, n_layer blocks, the
// final norm and the head tied to the token embedding. One builder serves prefill (a window
// from position 0, causal mask carried in the graph) and decode (a window after `past` cached
// positions, whose keys and values are inputs and whose mask is an input).
//
// Inputs:  tokens i32[seq], positions i32[seq];
//          with past > 0 also mask f32[seq, past + seq], past_k.L and past_v.L f32[past, n_embd].
// Outputs: logits f32[seq, vocab] (f32[1, vocab] with last_only), then k.L and v.L
//          f32[seq, n_embd] for every layer L: this window's keys and values for the cache.
#include <cstdint>

#include "ir/graph.h"
#include "model/gpt2_config.h"

namespace orion::model {

struct Gpt2GraphOptions {
  std::int64_t seq = 1;
  std::int64_t past = 0;
  bool last_only = false;  // logits of the last position only (generation needs no more)
};

ir::Graph gpt2_graph(const Gpt2Config& config, const Gpt2GraphOptions& options);

}  // namespace orion::model
