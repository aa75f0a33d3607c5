#pragma once
// tokenizer.json read in one pass: the model's vocabulary and merges, about 150k entries each in
// the tokenizers people use, go straight into vectors, and only the rest of the document, small,
// becomes a JSON value. nlohmann's value of the whole file, built, walked and freed, was most of
// the time every command that loads such a tokenizer took to start.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace orion::text::hf {

struct TokenizerJson {
  // The document; where model.vocab is an object (model.merges an array), it stands there
  // empty and its entries are below.
  nlohmann::json doc;
  bool vocab_read = false;
  // model.vocab's entries in the file's order, those whose value is an integer...
  std::vector<std::pair<std::string, std::int64_t>> vocab;
  // ...and the first whose value is not.
  std::optional<std::pair<std::string, nlohmann::json>> bad_vocab_entry;
  bool merges_read = false;
  // model.merges as pairs, "a b" and ["a", "b"] alike, up to the first element of neither
  // form, kept with its index.
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::pair<std::size_t, nlohmann::json>> bad_merge;
};

// Throws orion::Error naming `file` (and the byte, where known) for text that is not JSON or
// nests deeper than kMaxJsonDepth, as parse_json does.
TokenizerJson read_tokenizer_json(std::string_view text, std::string_view file);

}  // namespace orion::text::hf
