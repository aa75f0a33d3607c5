#pragma once
// GPT-2's byte-level BPE tokenizer, token for token the same as OpenAI's encoder.py, Hugging
// Face's GPT2Tokenizer and tiktoken's r50k_base:
//   1. the text is split at special tokens ("<|endoftext|>"), which become their own ids;
//   2. each stretch between them is split into pieces by GPT-2's pre-tokenizer
//      (text/gpt2_pretokenize.h);
//   3. each piece's bytes become the byte tokens (text/byte_unicode.h), and BPE merges
//      adjacent pairs: repeatedly the pair of lowest rank in merges.txt, every occurrence of it
//      from left to right, until no adjacent pair has a rank.
// Any byte string encodes, invalid UTF-8 included, and decode(encode(s)) == s.
//
// Files (Hugging Face's layout):
//   vocab.json  a JSON object from token spelling (text/byte_unicode.h) to id. Ids are
//               integers in [0, 2^31 - 1) and distinct; they need not be contiguous. Every one of
//               the 256 byte tokens must be present. A token whose spelling is not made of
//               mapped characters (possible only for special tokens) decodes to its own UTF-8
//               bytes, as Hugging Face's ByteLevel decoder does.
//   merges.txt  an optional first line "#version..." then one merge "A B" per line, by rank
//               (the first is rank 0): two token spellings separated by one space, each in the
//               vocabulary, as is their concatenation. A pair may appear once. A final newline
//               and trailing empty lines are allowed; "\r\n" line ends and a UTF-8 byte order
//               mark are accepted.
// Errors in either file throw orion::Error naming the file, the line and the column (columns
// count bytes; vocab.json's locations point at the end of the offending key).
//
// Thread safety: all const methods may be called concurrently. Encoding keeps a bounded cache
// of pieces' ids, shared (and locked by shards) between copies of a tokenizer; copies are
// cheap, sharing the immutable tables. A moved-from tokenizer may only be assigned to or
// destroyed.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace orion::text {

class BpeTokenizer final : public Tokenizer {
 public:
  // Reads Hugging Face's vocab.json and merges.txt. Throws orion::Error naming the path when a
  // file cannot be read, or the file, line and column when it is malformed.
  static BpeTokenizer load(const std::string& vocab_json_path, const std::string& merges_txt_path);
  // The same from the files' contents; errors name "SOURCE_NAME/vocab.json" and
  // "SOURCE_NAME/merges.txt".
  static BpeTokenizer from_data(std::string_view vocab_json, std::string_view merges_txt,
                                std::string_view source_name);
  // The minimal byte-level vocabulary: the 256 byte tokens with GPT-2's ids (0..255, in the
  // order of gpt2_byte_order()), "<|endoftext|>" as 256, no merges. Every byte is one token.
  static BpeTokenizer byte_level();

  // Token ids of `text` (any bytes). Special tokens in the text ("<|endoftext|>", when the
  // vocabulary has it) become their ids.
  std::vector<std::int32_t> encode(std::string_view text) const override;
  // The bytes of the tokens, concatenated. Throws orion::Error naming the first id that is
  // negative, at least vocab_size(), or not in a vocabulary with gaps.
  std::string decode(std::span<const std::int32_t> ids) const override;

  // One more than the largest id: the number of tokens when ids are contiguous from 0, as in
  // every real vocabulary (50257 for GPT-2).
  int vocab_size() const override;
  // The id of a token given by its spelling in vocab.json (e.g. "Ġthe"), if present.
  std::optional<std::int32_t> token_id(std::string_view token) const;
  // The spelling of token `id`; throws orion::Error like decode() for an unknown id.
  const std::string& token(std::int32_t id) const;
  // The id of "<|endoftext|>"; throws orion::Error when the vocabulary has none.
  std::int32_t eot_id() const;
  // Tokenizer: "<|endoftext|>" both begins and ends texts, as in GPT-2's vocabulary.
  std::string_view kind() const override { return "bpe"; }
  std::string piece(std::int32_t id) const override { return decode(std::span(&id, 1)); }
  std::optional<std::int32_t> bos_id() const override { return eos_id(); }
  std::optional<std::int32_t> eos_id() const override;
  // The number of merges (ranks 0..merge_count() - 1).
  std::size_t merge_count() const;

  // Writes DIR/vocab.json (one "token": id per line, by id) and DIR/merges.txt
  // ("#version: 0.2" then the merges by rank), each atomically; creates DIR if needed.
  // load() reads them back to an equal tokenizer.
  void save(const std::string& dir) const override;

  // Same vocabulary (spellings and ids) and same merges in the same order.
  friend bool operator==(const BpeTokenizer& a, const BpeTokenizer& b);

  // The tables, defined in bpe_tokenizer.cpp (public only so that its helpers can build one).
  struct Impl;

 private:
  explicit BpeTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Encoding throughput on `text` in MB/s (10^6 bytes per second) on the calling thread: encodes
// it repeatedly (at least three times and for at least about a second), with the piece cache warm
// after the first pass, and returns the median rate of the passes after the first.
double measure_encode_mb_per_s(const BpeTokenizer& tokenizer, std::string_view text);

}  // namespace orion::text
