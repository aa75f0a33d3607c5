#include "engine/generation.h"

#include <algorithm>
#include <cstdio>

#include "core/stopwatch.h"

namespace orion::engine {

GenerationOutcome generate_tokens(model::Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer,
                                  std::vector<float> logits, std::vector<std::int32_t>& ids,
                                  const GenerationLimits& limits, const std::function<void(std::string_view)>& emit) {
  GenerationOutcome out;
  out.stop = "generated the requested " + std::to_string(limits.max_tokens) + " tokens";
  while (out.generated < limits.max_tokens) {
    const std::int32_t next = sampler.sample(logits, ids);
    if (std::find(limits.stop_ids.begin(), limits.stop_ids.end(), next) != limits.stop_ids.end()) {
      out.stop = "stopped at the end-of-text token";
      out.stopped_at_eos = true;
      break;
    }
    if (next >= tokenizer.vocab_size()) {  // a row the tokenizer has no spelling for
      out.stop = "stopped: sampled token " + std::to_string(next) + ", which the tokenizer cannot spell";
      break;
    }
    ids.push_back(next);
    ++out.generated;
    emit(tokenizer.piece(next));
    if (out.generated == limits.max_tokens) break;
    if (session.position() >= session.context()) {
      out.stop = "stopped: the context of " + std::to_string(session.context()) + " tokens is full";
      break;
    }
    Stopwatch sw;
    logits = session.decode(next);
    out.decode_seconds += sw.seconds();
    ++out.decode_steps;
  }
  return out;
}

std::string GenerationOutcome::decode_rate() const {
  if (decode_steps <= 0 || decode_seconds <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f tok/s", static_cast<double>(decode_steps) / decode_seconds);
  return buf;
}

}  // namespace orion::engine
