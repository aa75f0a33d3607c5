#pragma once
// What generation and perplexity need from a running model, whichever engine runs it: the
// graph executor (GraphSession: the reference, any numerics) or the fast decoder
// (Gpt2FastSession, LlamaFastSession: hand-scheduled kernels streaming each weight once per
// token).
#include <cstdint>
#include <span>
#include <vector>

namespace orion::engine {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Runs `tokens` after what is cached, appends them to the cache, and returns the logits of
  // the last one.
  virtual std::vector<float> prefill(std::span<const std::int32_t> tokens) = 0;
  std::vector<float> decode(std::int32_t token) { return prefill(std::span(&token, 1)); }
  virtual std::int64_t position() const = 0;
  virtual std::int64_t context() const = 0;
  virtual void reset() = 0;
};

// Throws orion::Error (naming `arch`) unless `tokens` is non-empty, fits in the `context` after
// `cached` positions, and every id is below `vocab`: what a fast session checks before running.
void check_decoder_tokens(std::span<const std::int32_t> tokens, std::int64_t cached, std::int64_t context,
                          std::int64_t vocab, const char* arch);

}  // namespace orion::engine
