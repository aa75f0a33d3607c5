#include "engine/perplexity.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace orion::engine {

double token_nll(std::span<const float> logits, std::int32_t target) {
  if (target < 0 || static_cast<std::size_t>(target) >= logits.size())
    throw Error("target token " + std::to_string(target) + " is outside the logits");
  double mx = -std::numeric_limits<double>::infinity();
  for (float v : logits) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  return mx + std::log(sum) - static_cast<double>(logits[static_cast<std::size_t>(target)]);
}

PerplexityResult evaluate_perplexity(GraphSession& session, std::span<const std::int32_t> ids,
                                     std::int64_t window, std::int64_t stride,
                                     const std::function<void(std::int64_t, std::int64_t)>& progress, const ScoredRowFn& scored) {
  return evaluate_perplexity([&](std::span<const std::int32_t> t) { return session.window_logits(t); },
                             session.context(), ids, window, stride, progress, scored);
}

PerplexityResult evaluate_perplexity(const WindowLogitsFn& window_logits, std::int64_t max_window,
                                     std::span<const std::int32_t> ids, std::int64_t window, std::int64_t stride,
                                     const std::function<void(std::int64_t, std::int64_t)>& progress, const ScoredRowFn& scored) {
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n < 2) throw Error("perplexity needs at least 2 tokens, the text has " + std::to_string(n));
  if (window < 2 || window > max_window)
    throw Error("perplexity window " + std::to_string(window) + " must be in [2, " + std::to_string(max_window) + "]");
  if (stride < 1 || stride > window)
    throw Error("perplexity stride " + std::to_string(stride) + " must be in [1, window]");
  PerplexityResult r;
  double total = 0;
  std::int64_t scored_until = 1;  // targets before this index are scored already
  for (std::int64_t begin = 0;; begin += stride) {
    const std::int64_t end = std::min(begin + window, n);
    const Tensor logits = window_logits(ids.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)));
    const std::int64_t vocab = logits.dim(1);
    const float* l = logits.data<float>();
    for (std::int64_t t = std::max(scored_until, begin + 1); t < end; ++t) {
      const std::int64_t row = t - 1 - begin;  // the position that predicts token t
      const std::span<const float> predicts(l + row * vocab, static_cast<std::size_t>(vocab));
      total += token_nll(predicts, ids[static_cast<std::size_t>(t)]);
      if (scored) scored(t, predicts);
      ++r.tokens;
    }
    scored_until = end;
    if (progress) progress(end, n);
    if (end == n) break;
  }
  r.loss = total / static_cast<double>(r.tokens);
  r.perplexity = std::exp(r.loss);
  return r;
}

}  // namespace orion::engine
