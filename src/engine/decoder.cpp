#include "engine/decoder.h"

#include <string>

#include "core/error.h"

namespace orion::engine {

void Decoder::decode_batch_of(std::span<Decoder* const>, std::span<const std::int32_t>, std::vector<std::vector<float>>&) {
  throw Error("decode_batch: this engine decodes one session at a time");
}

bool can_decode_batch(std::span<Decoder* const> sessions) {
  if (sessions.size() < 2 || !sessions[0]->batch_key()) return false;
  for (const Decoder* d : sessions)
    if (d->batch_key() != sessions[0]->batch_key()) return false;
  return true;
}

void decode_batch(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                  std::vector<std::vector<float>>& logits) {
  if (!can_decode_batch(sessions))
    throw Error("decode_batch: " + std::to_string(sessions.size()) +
                " sessions that cannot decode together (two or more of one model, on an engine that batches)");
  sessions[0]->decode_batch_of(sessions, tokens, logits);
}

void check_decoder_tokens(std::span<const std::int32_t> tokens, std::int64_t cached, std::int64_t context,
                          std::int64_t vocab, const char* arch) {
  if (tokens.empty()) throw Error(std::string(arch) + ": nothing to run (no tokens)");
  if (cached + static_cast<std::int64_t>(tokens.size()) > context)
    throw Error(std::string(arch) + ": the context of " + std::to_string(context) + " tokens is full (" +
                std::to_string(cached) + " cached, " + std::to_string(tokens.size()) + " more)");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      throw Error("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary of " + std::to_string(vocab));
}

}  // namespace orion::engine
