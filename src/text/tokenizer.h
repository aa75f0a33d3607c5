#pragma once
// What the command line needs of a tokenizer, whichever kind a model folder holds: GPT-2's
// byte-level BPE (text/bpe_tokenizer.h), SentencePiece (text/sentencepiece_tokenizer.h) or
// Hugging Face's tokenizer.json (text/hf/hf_tokenizer.h). encode() adds no marker; whether a
// text starts with BOS is the model folder's choice (model/model_folder.h), from text_prefix()
// where the tokenizer's files say, else from the model's config.
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

  // "bpe", "sentencepiece" or "tokenizer.json".
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
  // The tokens a text starts with when the tokenizer's own files say so (tokenizer.json's
  // post-processor: Llama 3.2's <|begin_of_text|>, none for Qwen); nullopt when they do not,
  // and the model's config decides (model/model_folder.h).
  virtual std::optional<std::vector<std::int32_t>> text_prefix() const { return std::nullopt; }
  // Whether `id` is a special token, one that marks a text's structure rather than spelling it
  // (tokenizer.json's added tokens with "special": true, SentencePiece's control pieces): what
  // constrained decoding never lets into an answer.
  virtual bool is_special(std::int32_t /*id*/) const { return false; }
  // Writes the tokenizer's files into `dir` (a model folder), atomically each.
  virtual void save(const std::string& dir) const = 0;

 protected:
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;
};

// The rows a model's embedding must have for this tokenizer: vocab_size() less the special
// tokens at its end, which a text model may lack (Gemma 3's tokenizer.json lists the multimodal
// <image_soft_token> one past the text model's 262144 rows); a text that spells one fails as
// any id past the vocabulary does.
inline int text_vocab_size(const Tokenizer& t) {
  int n = t.vocab_size();
  while (n > 0 && t.is_special(n - 1)) --n;
  return n;
}

}  // namespace orion::text
