#include "engine/generation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/stopwatch.h"

namespace orion::engine {

Generation::Generation(Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer,
                       std::vector<float> logits, std::vector<std::int32_t>& ids, GenerationLimits limits)
    : session_(session), sampler_(sampler), tokenizer_(tokenizer), logits_(std::move(logits)), ids_(ids), prompt_size_(ids.size()),
      limits_(std::move(limits)) {
  out_.stop = "generated the requested " + std::to_string(limits_.max_tokens) + " tokens";
  done_ = limits_.max_tokens <= 0;
}

void Generation::stop(std::string why) {
  if (done_) return;
  out_.stop = std::move(why);
  done_ = true;
}

std::optional<std::int32_t> Generation::next_token(const std::function<void(std::string_view)>& emit) {
  if (done_) return std::nullopt;
  // The model's own distribution, before the constraint's mask changes the logits.
  double log_total = 0;
  std::vector<std::pair<std::int32_t, float>> top;
  if (limits_.logprobs >= 0) {
    float peak = -std::numeric_limits<float>::infinity();
    for (const float v : logits_) peak = std::isfinite(v) ? std::max(peak, v) : peak;
    double sum = 0;
    for (const float v : logits_) sum += std::isfinite(v) ? std::exp(static_cast<double>(v - peak)) : 0.0;
    log_total = static_cast<double>(peak) + std::log(sum);
    // The most likely `logprobs` tokens, the largest first (ties: the lower id).
    const auto better = [](const std::pair<std::int32_t, float>& a, const std::pair<std::int32_t, float>& b) {
      return a.second > b.second || (a.second == b.second && a.first < b.first);
    };
    const auto k = static_cast<std::size_t>(limits_.logprobs);
    for (std::size_t i = 0; i < logits_.size() && k > 0; ++i) {
      if (!std::isfinite(logits_[i])) continue;
      const std::pair<std::int32_t, float> c{static_cast<std::int32_t>(i), logits_[i]};
      if (top.size() < k) {
        top.push_back(c);
        std::push_heap(top.begin(), top.end(), better);
      } else if (better(c, top.front())) {
        std::pop_heap(top.begin(), top.end(), better);
        top.back() = c;
        std::push_heap(top.begin(), top.end(), better);
      }
    }
    std::sort_heap(top.begin(), top.end(), better);
    for (auto& [id, v] : top) v = static_cast<float>(static_cast<double>(v) - log_total);
  }
  text::TokenConstraint* constraint = limits_.constraint;
  if (constraint != nullptr) {
    if (constraint->complete()) {
      out_.stop = "the constrained answer is complete";
      out_.stopped_at_eos = true;
      done_ = true;
      return std::nullopt;
    }
    constraint->mask(logits_);
  }
  const std::int32_t next = sampler_.sample(logits_, ids_, std::span(ids_).subspan(prompt_size_));
  if (std::find(limits_.stop_ids.begin(), limits_.stop_ids.end(), next) != limits_.stop_ids.end()) {
    out_.stop = "stopped at the end-of-text token";
    out_.stopped_at_eos = true;
    done_ = true;
    return std::nullopt;
  }
  if (next >= tokenizer_.vocab_size()) {  // a row the tokenizer has no spelling for
    stop("stopped: sampled token " + std::to_string(next) + ", which the tokenizer cannot spell");
    return std::nullopt;
  }
  if (constraint != nullptr) constraint->accept(next);
  if (limits_.logprobs >= 0)
    logprobs_.push_back({next, static_cast<float>(static_cast<double>(logits_[static_cast<std::size_t>(next)]) - log_total), std::move(top)});
  ids_.push_back(next);
  ++out_.generated;
  emit(tokenizer_.piece(next));
  if (out_.generated >= limits_.max_tokens) {
    done_ = true;
    return std::nullopt;
  }
  if (session_.position() >= session_.context()) {
    stop("stopped: the context of " + std::to_string(session_.context()) + " tokens is full");
    return std::nullopt;
  }
  return next;
}

void Generation::set_logits(std::vector<float>& logits, double seconds) {
  logits_.swap(logits);
  out_.decode_seconds += seconds;
  ++out_.decode_steps;
}

bool Generation::step(const std::function<void(std::string_view)>& emit) {
  const std::optional<std::int32_t> next = next_token(emit);
  if (!next) return false;
  Stopwatch sw;
  std::vector<float> logits = session_.decode(*next);
  set_logits(logits, sw.seconds());
  return true;
}

GenerationOutcome generate_tokens(Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer,
                                  std::vector<float> logits, std::vector<std::int32_t>& ids,
                                  const GenerationLimits& limits, const std::function<void(std::string_view)>& emit) {
  Generation g(session, sampler, tokenizer, std::move(logits), ids, limits);
  while (g.step(emit)) {
  }
  return g.outcome();
}

std::string GenerationOutcome::decode_rate() const {
  if (decode_steps <= 0 || decode_seconds <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f tok/s", static_cast<double>(decode_steps) / decode_seconds);
  return buf;
}

}  // namespace orion::engine
