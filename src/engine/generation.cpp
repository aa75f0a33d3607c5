#include "engine/generation.h"

#include <algorithm>
#include <cstdio>

#include "core/stopwatch.h"

namespace orion::engine {

Generation::Generation(Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer,
                       std::vector<float> logits, std::vector<std::int32_t>& ids, GenerationLimits limits)
    : session_(session), sampler_(sampler), tokenizer_(tokenizer), logits_(std::move(logits)), ids_(ids),
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
  const std::int32_t next = sampler_.sample(logits_, ids_);
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
