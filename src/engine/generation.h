#pragma once
// Generating a continuation: tokens sampled one by one after a prefilled prompt, each piece
// handed on as it comes, until the requested count, a stop id (any end-of-text id of the model
// folder), a token the tokenizer cannot spell, or a full context. What `orion generate`,
// `orion chat` and the server share, so that they stop for the same reasons.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/decoder.h"
#include "text/constrain/token_constraint.h"
#include "text/sampler.h"
#include "text/tokenizer.h"

namespace orion::engine {

struct GenerationLimits {
  int max_tokens = 64;
  std::vector<std::int32_t> stop_ids;  // sampled, one ends the text (and is not emitted)
  // Masks each step's logits to the tokens it allows (constrained decoding), and ends the text
  // when it is whole; nullptr: none. It must outlive the generation.
  text::TokenConstraint* constraint = nullptr;
  // Each sampled token's log-probability under the model (its logits' log-softmax, before any
  // temperature or mask) and this many most likely alternatives; -1: none.
  int logprobs = -1;
};

// A sampled token's log-probability and the most likely tokens' at its step.
struct TokenLogprob {
  std::int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<std::int32_t, float>> top;
};

struct GenerationOutcome {
  int generated = 0;  // tokens emitted
  int decode_steps = 0;
  double decode_seconds = 0;
  bool stopped_at_eos = false;
  std::string stop;  // why it ended, as a sentence

  // "12.3 tok/s" over the decode steps, or "" when none ran: the rate chat and generate print.
  std::string decode_rate() const;
};

// One continuation, a token at a time: what generate_tokens loops over, and what a server
// steps for each of its sequences in turn. Sampling starts from `logits` (the prompt's last
// row); each new token is appended to `ids` (the whole context, for the repetition penalty and
// the caller), its piece given to `emit`, and run through `session` unless generation ends
// there. The session then holds every emitted token but the last. The session, sampler,
// tokenizer and ids must outlive it.
class Generation {
 public:
  Generation(Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer, std::vector<float> logits,
             std::vector<std::int32_t>& ids, GenerationLimits limits);
  // One token; false once generation has ended (outcome() says why), this step included when
  // it ended it.
  bool step(const std::function<void(std::string_view)>& emit);
  // step() in two halves, for a caller that runs several sessions' tokens together: the next
  // token sampled and emitted, to be run through the session (nullopt: generation has ended),
  // then the logits that running it gave.
  std::optional<std::int32_t> next_token(const std::function<void(std::string_view)>& emit);
  // Takes the logits by swapping: `logits` is left holding the previous ones' storage, for the
  // caller to reuse (a server decoding every step would otherwise allocate them each time).
  void set_logits(std::vector<float>& logits, double seconds);
  bool done() const { return done_; }
  // Ends it here (a cancelled request).
  void stop(std::string why);
  const GenerationOutcome& outcome() const { return out_; }
  // The log-probabilities of the tokens emitted since the last call (GenerationLimits::logprobs).
  std::vector<TokenLogprob> take_logprobs() { return std::exchange(logprobs_, {}); }

 private:
  Decoder& session_;
  text::Sampler& sampler_;
  const text::Tokenizer& tokenizer_;
  std::vector<float> logits_;
  std::vector<std::int32_t>& ids_;
  std::size_t prompt_size_;  // ids_ before the answer: the penalties count what comes after
  GenerationLimits limits_;
  GenerationOutcome out_;
  std::vector<TokenLogprob> logprobs_;
  bool done_ = false;
};

// The whole continuation at once (generate, chat).
GenerationOutcome generate_tokens(Decoder& session, text::Sampler& sampler, const text::Tokenizer& tokenizer,
                                  std::vector<float> logits, std::vector<std::int32_t>& ids,
                                  const GenerationLimits& limits, const std::function<void(std::string_view)>& emit);

}  // namespace orion::engine
