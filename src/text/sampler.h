#pragma once
// Next-token sampling from logits: greedy, temperature, top-k, top-p (nucleus) and a
// repetition penalty, seeded so that a run can be repeated exactly.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/random.h"

namespace orion::text {

struct SamplerOptions {
  float temperature = 0.8f;        // 0: greedy (argmax)
  int top_k = 40;                  // 0: no limit
  float top_p = 0.95f;             // 1: no limit
  float repetition_penalty = 1.0f; // 1: none; >1 discourages tokens already in the history
  // OpenAI's penalties over the generated tokens: each token's logit less frequency_penalty
  // times its count so far and presence_penalty once if it came at all.
  float frequency_penalty = 0.0f, presence_penalty = 0.0f;
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // added to those tokens' logits
  std::uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws orion::Error for options out of range (negative temperature or top-k, top-p outside
  // (0, 1], penalty <= 0).
  explicit Sampler(SamplerOptions options);

  // Picks the next token. `history` is the context so far (for the repetition penalty).
  // Non-finite logits are treated as impossible tokens; all of them non-finite is an error.
  // `generated`: the tokens of the answer so far (for the frequency and presence penalties).
  // The logits the choice is made from, with the bias and penalties applied, are those of
  // adjusted(); greedy takes their largest.
  std::int32_t sample(std::span<const float> logits, std::span<const std::int32_t> history = {},
                      std::span<const std::int32_t> generated = {});
  // The logits after the repetition penalty, the logit bias and the frequency and presence
  // penalties, as sample() sees them.
  std::vector<float> adjusted(std::span<const float> logits, std::span<const std::int32_t> history,
                              std::span<const std::int32_t> generated) const;

  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  Rng rng_;
};

}  // namespace orion::text
