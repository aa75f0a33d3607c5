#pragma once
// Mean next-token loss and perplexity of a token sequence, over sliding windows of the model's
// context as Hugging Face's and llama.cpp's perplexity tools do: each window after the first
// starts `stride` tokens after the previous one and scores only the tokens the previous window
// did not, each with as much left context as the window gives it.
#include <cstdint>
#include <functional>
#include <span>

#include "engine/graph_session.h"

namespace orion::engine {

struct PerplexityResult {
  std::int64_t tokens = 0;  // scored tokens (every token but the first)
  double loss = 0;          // mean negative log-likelihood, nats
  double perplexity = 0;    // exp(loss)
};

// -log softmax(logits)[target], computed in double.
double token_nll(std::span<const float> logits, std::int32_t target);

// The logits [n, vocab] of every position of a window of n tokens that starts at position 0:
// how a device (the CPU session, a compiled ANE package) is asked.
using WindowLogitsFn = std::function<Tensor(std::span<const std::int32_t> tokens)>;

// Called for each scored token: its index in the sequence and the logits that predict it.
using ScoredRowFn = std::function<void(std::int64_t index, std::span<const float> logits)>;

// `window` in [2, max_window]; `stride` in [1, window]. `progress(done, total)` is called after
// each window when given, `scored` for each token scored.
PerplexityResult evaluate_perplexity(const WindowLogitsFn& window_logits, std::int64_t max_window,
                                     std::span<const std::int32_t> ids, std::int64_t window, std::int64_t stride,
                                     const std::function<void(std::int64_t, std::int64_t)>& progress = {},
                                     const ScoredRowFn& scored = {});

// The same on a CPU session; max_window is the model's context.
PerplexityResult evaluate_perplexity(GraphSession& session, std::span<const std::int32_t> ids,
                                     std::int64_t window, std::int64_t stride,
                                     const std::function<void(std::int64_t, std::int64_t)>& progress = {},
                                     const ScoredRowFn& scored = {});

}  // namespace orion::engine
