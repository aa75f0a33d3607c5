#pragma once
// Small hand-made vocabularies for tokenizer tests.
#include <string>
#include <vector>

#include "text/byte_unicode.h"

namespace orion::text::tiny {

// A string as a JSON string literal (the spellings here need only '"' and '\' escaped).
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// vocab.json with the 256 byte tokens under GPT-2's ids 0..255, then `extra` from id 256, one
// entry per line: line 1 is "{" and the entry of id i is on line i + 2.
inline std::string vocab_json(const std::vector<std::string>& extra) {
  std::vector<std::string> spellings;
  for (const std::uint8_t b : gpt2_byte_order()) spellings.emplace_back(byte_to_utf8(b));
  spellings.insert(spellings.end(), extra.begin(), extra.end());
  std::string out = "{\n";
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    out += json_string(spellings[i]) + ": " + std::to_string(i);
    out += i + 1 < spellings.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

}  // namespace orion::text::tiny
