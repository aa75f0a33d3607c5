#pragma once
// The BPE model of Hugging Face's tokenizers (tokenizer.json's "model": {"type": "BPE"}) on one
// pre-tokenized word: its characters become the ids of the vocabulary's one-character tokens
// (or, with byte_fallback, the <0xNN> tokens of their bytes, or the unknown token), and then the
// adjacent pair of lowest merge rank is merged, again and again, until no adjacent pair has a
// rank. A heap over the pairs makes a word of n characters O(n log n), which matters where a
// tokenizer has no pre-tokenizer and the whole text is one word (Llama 2's, TinyLlama's).
// ignore_merges (Llama 3's): a word that is a token of the vocabulary as a whole is that token.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace orion::text::hf {

struct BpeModel {
  std::unordered_map<std::string, std::int32_t> vocab;
  // (left id << 32 | right id) -> (rank, merged id).
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, std::int32_t>> merges;
  std::optional<std::int32_t> unk_id;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::int32_t byte_ids[256] = {};  // <0x00>..<0xFF>, with byte_fallback

  // Appends the ids of `word` (UTF-8) to `out`.
  void encode_word(std::string_view word, std::vector<std::int32_t>& out) const;
};

}  // namespace orion::text::hf
