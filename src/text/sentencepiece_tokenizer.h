#pragma once
// SentencePiece tokenizers (Llama's, and those `orion tokenizer train` makes): a
// tokenizer.model file read by the SentencePiece library itself (Debian's
// libsentencepiece-dev), so that ids are the library's own, token for token what its
// spm_encode and spm_decode give (tests/text holds the two to each other on a few MB of prose).
// encode() adds no BOS or EOS: whether a text starts with one is the model config's call.
// Byte fallback is the model's: a model trained with it spells unknown characters as <0xNN>
// byte tokens, one without maps them to its unknown token.
//
// Thread safety: const methods may be called concurrently. Copies share the loaded model.
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace orion::text {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Reads a tokenizer.model. Throws orion::Error naming the path and the library's message.
  static SentencePieceTokenizer load(const std::string& path);
  // The same from the file's bytes; errors name `source`.
  static SentencePieceTokenizer from_serialized(std::string_view bytes, const std::string& source);

  std::string_view kind() const override { return "sentencepiece"; }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  // The piece with its word-boundary mark U+2581 as a space, a byte token as its byte,
  // the unknown token as SentencePiece decodes it (" \u2047 "), a control token as nothing.
  std::string piece(std::int32_t id) const override;
  int vocab_size() const override;
  std::optional<std::int32_t> bos_id() const override;
  std::optional<std::int32_t> eos_id() const override;
  // Writes DIR/tokenizer.model: the model as loaded, byte for byte.
  void save(const std::string& dir) const override;

  // The model's serialized protobuf (what tokenizer.model holds).
  const std::string& serialized() const { return *serialized_; }
  // Whether unknown characters become byte tokens.
  bool byte_fallback() const;

 private:
  SentencePieceTokenizer() = default;
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> sp_;
  std::shared_ptr<const std::string> serialized_;
  std::string source_;
};

}  // namespace orion::text
