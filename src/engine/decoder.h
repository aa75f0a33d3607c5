#pragma once
// What generation, perplexity and the server need from a running model, whichever engine runs
// it: the graph executor (GraphSession: the reference, any numerics), the fast decoder
// (Gpt2FastSession, LlamaFastSession: hand-scheduled kernels streaming each weight once per
// token) or a device (engine/device_decoders.h). Several sessions of an engine that can
// decode them together take one step each in one pass over the weights (decode_batch), so
// that a server's concurrent requests stream together without knowing which engine runs them.
#include <cstddef>
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
  // prefill() without the logits: a long prompt's chunks before its last, which skip the head
  // where the engine can. The default runs prefill() and drops them.
  virtual void extend(std::span<const std::int32_t> tokens) { (void)prefill(tokens); }
  virtual std::int64_t position() const = 0;
  virtual std::int64_t context() const = 0;
  virtual void reset() = 0;
  // Drops what the cache holds after its first `position` tokens (position <= position()), so
  // that a prompt that starts as the cached one did runs only its rest (a server's prompt
  // cache). False, the default, when the engine cannot: the caller resets instead.
  virtual bool rewind(std::int64_t /*position*/) { return false; }
  // The bytes one cached position holds (0: unknown): what a prompt cache's budget counts.
  virtual std::size_t cache_bytes_per_position() const { return 0; }

  // Sessions that return the same non-null key can decode_batch together (a key no other
  // engine's sessions return: the fast engine's is its model's head). nullptr, the default:
  // this session decodes alone.
  virtual const void* batch_key() const { return nullptr; }

 protected:
  // decode_batch's work, called on its first session: every one of `sessions` has this
  // session's batch_key(). The default throws: an engine without a key never gets here.
  virtual void decode_batch_of(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                               std::vector<std::vector<float>>& logits);

  friend void decode_batch(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                           std::vector<std::vector<float>>& logits);
};

// Whether decode_batch can run `sessions` together: two or more, with one non-null batch_key().
bool can_decode_batch(std::span<Decoder* const> sessions);
// One token for each of `sessions` (tokens[b] for session b) in one pass over the weights:
// logits[b] gets session b's, the very bits its decode() would give, and every position
// advances by one (the vectors' storage is reused from call to call). Throws orion::Error
// unless can_decode_batch(sessions), and for a full context or a token outside the vocabulary.
void decode_batch(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                  std::vector<std::vector<float>>& logits);

// Throws orion::Error (naming `arch`) unless `tokens` is non-empty, fits in the `context` after
// `cached` positions, and every id is below `vocab`: what a fast session checks before running.
void check_decoder_tokens(std::span<const std::int32_t> tokens, std::int64_t cached, std::int64_t context,
                          std::int64_t vocab, const char* arch);

}  // namespace orion::engine
