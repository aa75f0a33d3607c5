#pragma once
// The pieces of a tokenizer.json pipeline around its model, parsed from their JSON and applied:
// normalizers (NFC, NFKC, Prepend, Replace, Lowercase, Sequence), pre-tokenizers (Split with a
// regex or a string, Isolated or Removed, inverted or not; ByteLevel with or without GPT-2's
// pattern and the prefix space; Sequence) and decoders (ByteLevel, Replace, ByteFallback, Fuse,
// Strip, Sequence). A type or an option outside these is refused by name, with the JSON path,
// never skipped: a pipeline half-read would tokenize differently without a word.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/hf/hf_regex.h"

namespace orion::text::hf {

struct NormalizerStep {
  enum class Kind : std::uint8_t { nfc, nfkc, prepend, replace, lowercase };
  Kind kind;
  std::string text = {};  // prepend: what; replace: the content put in
  std::shared_ptr<const Regex> pattern = nullptr;  // replace
};

struct PreTokenizerStep {
  enum class Kind : std::uint8_t { split, byte_level };
  Kind kind;
  std::shared_ptr<const Regex> pattern = nullptr;  // split; byte_level with use_regex (GPT-2's)
  // split: what becomes of the matches (tokenizers' SplitDelimiterBehavior): their own pieces,
  // dropped, joined to the piece before or after them, or runs of them joined into one.
  enum class Behavior : std::uint8_t { isolated, removed, merged_with_previous, merged_with_next, contiguous };
  Behavior behavior = Behavior::isolated;
  bool invert = false;   // split: the pattern matches the gaps
  bool add_prefix_space = false;  // byte_level
};

struct DecoderStep {
  enum class Kind : std::uint8_t { byte_level, replace, byte_fallback, fuse, strip };
  Kind kind;
  std::string from = {}, to = {};  // replace (a plain string; a regex is refused)
  char32_t strip_char = U' ';
  int strip_start = 0, strip_stop = 0;
};

// `j` is the "normalizer" / "pre_tokenizer" / "decoder" value (null: no step); `source` names
// the file in errors.
std::vector<NormalizerStep> parse_normalizer(const nlohmann::json& j, const std::string& source);
std::vector<PreTokenizerStep> parse_pre_tokenizer(const nlohmann::json& j, const std::string& source);
std::vector<DecoderStep> parse_decoder(const nlohmann::json& j, const std::string& source);

std::string normalize(const std::vector<NormalizerStep>& steps, std::string text);
// The pieces the model encodes one by one, in order; byte-level ones already spelled in GPT-2's
// byte alphabet (text/byte_unicode.h).
std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string text);
// The text of a sequence of token spellings.
std::string decode_tokens(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens);

// ByteFallback's spelling of one byte, `<0xNN>` with two hex digits: the byte, or none.
std::optional<unsigned char> fallback_byte(std::string_view token);
// Every occurrence of `from` in `text` replaced by `to`, left to right (a Replace decoder's step).
std::string replace_plain(std::string_view text, std::string_view from, std::string_view to);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, as Python's and JavaScript's
// decoders do: the pipeline runs on valid text.
std::string valid_utf8(std::string_view text);

}  // namespace orion::text::hf
