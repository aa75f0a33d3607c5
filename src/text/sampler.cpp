#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace orion::text {

Sampler::Sampler(SamplerOptions options) : options_(options), rng_(options.seed) {
  if (!(options_.temperature >= 0)) throw Error("sampler: temperature must be >= 0");
  if (options_.top_k < 0) throw Error("sampler: top-k must be >= 0");
  if (!(options_.top_p > 0 && options_.top_p <= 1)) throw Error("sampler: top-p must be in (0, 1]");
  if (!(options_.repetition_penalty > 0)) throw Error("sampler: repetition penalty must be > 0");
}

std::vector<float> Sampler::adjusted(std::span<const float> logits, std::span<const std::int32_t> history,
                                     std::span<const std::int32_t> generated) const {
  const std::size_t n = logits.size();
  std::vector<float> l(logits.begin(), logits.end());
  if (options_.repetition_penalty != 1.0f) {
    // As in CTRL and Hugging Face: shrink positive logits, grow negative ones, once per token.
    std::vector<bool> seen(n, false);
    for (std::int32_t t : history)
      if (t >= 0 && static_cast<std::size_t>(t) < n && !seen[static_cast<std::size_t>(t)]) {
        seen[static_cast<std::size_t>(t)] = true;
        float& v = l[static_cast<std::size_t>(t)];
        v = v > 0 ? v / options_.repetition_penalty : v * options_.repetition_penalty;
      }
  }
  for (const auto& [id, bias] : options_.logit_bias)
    if (id >= 0 && static_cast<std::size_t>(id) < n) l[static_cast<std::size_t>(id)] += bias;
  if (options_.frequency_penalty != 0.0f || options_.presence_penalty != 0.0f) {
    std::vector<std::int32_t> count(n, 0);
    for (std::int32_t t : generated)
      if (t >= 0 && static_cast<std::size_t>(t) < n) ++count[static_cast<std::size_t>(t)];
    for (std::size_t i = 0; i < n; ++i)
      if (count[i] > 0) l[i] -= options_.frequency_penalty * static_cast<float>(count[i]) + options_.presence_penalty;
  }
  return l;
}

std::int32_t Sampler::sample(std::span<const float> logits, std::span<const std::int32_t> history,
                             std::span<const std::int32_t> generated) {
  const std::size_t n = logits.size();
  const bool plain = options_.repetition_penalty == 1.0f && options_.logit_bias.empty() && options_.frequency_penalty == 0.0f &&
                     options_.presence_penalty == 0.0f;
  if (options_.temperature == 0.0f && plain) {
    // Greedy without a penalty: one scan, no copies (a server samples every stream each step).
    // The first of the largest finite logits, as the general path's order gives.
    std::size_t best = n;
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(logits[i]) && (best == n || logits[i] > logits[best])) best = i;
    if (best == n) throw Error("sampler: every logit is infinite or NaN");
    return static_cast<std::int32_t>(best);
  }
  const std::vector<float> l = plain ? std::vector<float>(logits.begin(), logits.end()) : adjusted(logits, history, generated);
  std::vector<std::int32_t> ids;
  ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(l[i])) ids.push_back(static_cast<std::int32_t>(i));
  if (ids.empty()) throw Error("sampler: every logit is infinite or NaN");
  auto by_logit = [&](std::int32_t a, std::int32_t b) {
    const float la = l[static_cast<std::size_t>(a)], lb = l[static_cast<std::size_t>(b)];
    return la > lb || (la == lb && a < b);  // ties go to the lower id: deterministic
  };
  if (options_.temperature == 0.0f) return *std::min_element(ids.begin(), ids.end(), by_logit);
  const double inv_t = 1.0 / options_.temperature;
  if ((options_.top_k <= 0 || static_cast<std::size_t>(options_.top_k) >= ids.size()) && options_.top_p >= 1.0f) {
    // Nothing cut: the whole distribution in id order, no sort (a server's default, where a
    // sort of a 150k vocabulary per token would cost more than the model's step).
    float top = l[static_cast<std::size_t>(ids[0])];
    for (const std::int32_t i : ids) top = std::max(top, l[static_cast<std::size_t>(i)]);
    std::vector<double> p(ids.size());
    double total = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) total += p[i] = std::exp((l[static_cast<std::size_t>(ids[i])] - top) * inv_t);
    const double r = rng_.uniform_double() * total;
    double acc = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      acc += p[i];
      if (r < acc) return ids[i];
    }
    return ids.back();
  }

  std::size_t keep = ids.size();
  if (options_.top_k > 0) keep = std::min(keep, static_cast<std::size_t>(options_.top_k));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), by_logit);
  ids.resize(keep);

  const double top = l[static_cast<std::size_t>(ids[0])];
  std::vector<double> p(keep);
  for (std::size_t i = 0; i < keep; ++i) p[i] = std::exp((l[static_cast<std::size_t>(ids[i])] - top) * inv_t);
  double total = std::accumulate(p.begin(), p.end(), 0.0);
  if (options_.top_p < 1.0f) {
    // The smallest prefix (by probability) whose mass reaches top_p.
    double mass = 0;
    std::size_t cut = 0;
    while (cut < keep && mass < options_.top_p * total) mass += p[cut++];
    p.resize(std::max<std::size_t>(cut, 1));
    total = std::accumulate(p.begin(), p.end(), 0.0);
  }
  const double r = rng_.uniform_double() * total;
  double acc = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (r < acc) return ids[i];
  }
  return ids[p.size() - 1];
}

}  // namespace orion::text
