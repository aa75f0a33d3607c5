#pragma once
// What the command line needs of a tokenizer, whichever kind a model folder holds: GPT-2's
// byte-level BPE (text/bpe_tokenizer.h) or SentencePiece (text/sentencepiece_tokenizer.h).
// Model conventions (whether a text starts with BOS) belong to the model's config, not here:
// encode() adds no marker.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orion::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // "bpe" or "sentencepiece".
  virtual std::string_view kind() const = 0;
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // The text of a whole sequence. Throws orion::Error naming the first id outside the vocabulary.
  virtual std::string decode(std::span<const std::int32_t> ids) const = 0;
  // The bytes token `id` adds to a text under way, for streaming output: concatenated, the
  // pieces of a continuation give its text (a multi-byte character may arrive split over
  // byte tokens). Nothing for control tokens.
  virtual std::string piece(std::int32_t id) const = 0;
  // One more than the largest id.
  virtual int vocab_size() const = 0;
  // The vocabulary's beginning- and end-of-text tokens, when it has them.
  virtual std::optional<std::int32_t> bos_id() const = 0;
  virtual std::optional<std::int32_t> eos_id() const = 0;
  // Writes the tokenizer's files into `dir` (a model folder), atomically each.
  virtual void save(const std::string& dir) const = 0;

 protected:
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;
};

}  // namespace orion::text
