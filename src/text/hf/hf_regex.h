#pragma once
// The regular expressions of tokenizer.json (Split pre-tokenizers, Replace normalizers), through
// PCRE2 in its Unicode mode (UTF and UCP: \p{L}, \s and \w by Unicode properties, lookahead):
// the patterns are written for Oniguruma, which Hugging Face's tokenizers use, and the ones
// these files carry mean the same in PCRE2 (tests/text/hf_tokenizer_test.cpp compares whole
// corpora with Hugging Face's JavaScript tokenizers). Compiled once, JIT where PCRE2 has it;
// matching is thread-safe.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orion::text::hf {

class Regex {
 public:
  // `literal`: the pattern is a plain string (tokenizer.json's {"String": ...}). Throws
  // orion::Error naming `source` and PCRE2's message and offset for a pattern it refuses.
  Regex(const std::string& pattern, bool literal, const std::string& source);
  // The non-overlapping matches in `text` (valid UTF-8), left to right, as [begin, end) byte
  // offsets; an empty match moves on by one character.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8, freed with pcre2_code_free
};

}  // namespace orion::text::hf
