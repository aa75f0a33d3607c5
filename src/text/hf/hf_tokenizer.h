#pragma once
// A tokenizer from Hugging Face's tokenizer.json (the `tokenizers` library's format), with the
// tokenizer_config.json beside it for the roles of its special tokens. What it covers is what
// the models people run ship: the BPE model, byte-level (GPT-2, SmolLM2, Llama 3, Qwen2/3,
// Mistral's Tekken) or SentencePiece-style with byte fallback (Llama 2, TinyLlama), and the
// normalizers, pre-tokenizers and decoders of text/hf/hf_components.h. Anything else is refused
// by name when the file is read.
//
// Encoding runs as the Rust library does: the added tokens are found first (those with
// "normalized": false in the raw text, leftmost and longest first, with their lstrip/rstrip),
// each stretch between them is normalized, the normalized added tokens are found in it, and the
// rest is pre-tokenized and encoded by the model word by word. encode() adds no special tokens;
// text_prefix() says which the post-processor puts before a text (Llama 3.2's
// <|begin_of_text|>, Llama 2's <s>; none for Qwen).
//
// Text that is not valid UTF-8 is read with U+FFFD for each invalid sequence, as Python and
// JavaScript read it. Thread safety: all const methods may be called concurrently.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace orion::text {

class HfTokenizer final : public Tokenizer {
 public:
  // DIR/tokenizer.json and, when present, DIR/tokenizer_config.json. Errors name the file and
  // the key.
  static HfTokenizer load(const std::string& dir);
  // The same from the files' texts (config may be empty); errors name `source`/tokenizer.json.
  static HfTokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config,
                               const std::string& source);

  std::string_view kind() const override { return "tokenizer.json"; }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  // The text as transformers' decode gives it: with the spaces before punctuation removed when
  // tokenizer_config.json sets clean_up_tokenization_spaces (piece() keeps them).
  std::string decode(std::span<const std::int32_t> ids) const override;
  std::string piece(std::int32_t id) const override;
  int vocab_size() const override;
  // tokenizer_config.json's bos_token and eos_token, when it names them.
  std::optional<std::int32_t> bos_id() const override;
  std::optional<std::int32_t> eos_id() const override;
  std::optional<std::vector<std::int32_t>> text_prefix() const override;
  bool is_special(std::int32_t id) const override;
  // Copies tokenizer.json and tokenizer_config.json byte for byte.
  void save(const std::string& dir) const override;

  // The spelling of token `id` (the vocabulary's or an added token's content).
  const std::string& token(std::int32_t id) const;
  std::optional<std::int32_t> token_id(std::string_view spelling) const;
  // tokenizer_config.json's text ("" when there is none): its chat_template.
  const std::string& config_text() const;

 private:
  struct Data;
  std::shared_ptr<const Data> d_;
};

}  // namespace orion::text
