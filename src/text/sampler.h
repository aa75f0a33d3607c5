#pragma once
// Next-token sampling from logits: greedy, temperature, top-k, top-p (nucleus) and a
// repetition penalty, seeded so that a run can be repeated exactly.
#include <cstdint>
#include <span>

#include "core/random.h"

namespace orion::text {

struct SamplerOptions {
  float temperature = 0.8f;        // 0: greedy (argmax)
  int top_k = 40;                  // 0: no limit
  float top_p = 0.95f;             // 1: no limit
  float repetition_penalty = 1.0f; // 1: none; >1 discourages tokens already in the history
  std::uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws orion::Error for options out of range (negative temperature or top-k, top-p outside
  // (0, 1], penalty <= 0).
  explicit Sampler(SamplerOptions options);

  // Picks the next token. `history` is the context so far (for the repetition penalty).
  // Non-finite logits are treated as impossible tokens; all of them non-finite is an error.
  std::int32_t sample(std::span<const float> logits, std::span<const std::int32_t> history = {});

  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  Rng rng_;
};

}  // namespace orion::text
