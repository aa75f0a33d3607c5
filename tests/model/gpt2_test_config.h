#pragma once
// A small GPT-2 configuration for tests that build whole models (GPT-2's other settings).
#include <cstdint>

#include "model/gpt2/gpt2_config.h"

namespace orion::model::testing {

struct SmallGpt2 {
  std::int64_t layers = 2, dim = 64, heads = 2, vocab = 320, positions = 128;
};

inline Gpt2Config small_gpt2_config(const SmallGpt2& s = {}) {
  Gpt2Config c;
  c.n_layer = s.layers;
  c.n_embd = s.dim;
  c.n_head = s.heads;
  c.vocab_size = s.vocab;
  c.n_positions = s.positions;
  c.eos_token_id = s.vocab - 1;  // GPT-2's end-of-text is its last token
  return c;
}

}  // namespace orion::model::testing
