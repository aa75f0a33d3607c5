#pragma once
// Parsing untrusted JSON text (config.json, a package's manifest) into a value, with a limit on
// nesting. nlohmann's parser is iterative, but copying, comparing and printing a value recurse,
// so a file of a million '[' parses and then overflows the stack when an error message prints
// the value (found replaying such a file through fuzz/gpt2_config_fuzz.cpp). No file Orion
// reads nests deeper than a few levels; the limit leaves room for what other tools add.
#include <string_view>

#include <nlohmann/json.hpp>

namespace orion {

inline constexpr int kMaxJsonDepth = 64;

// Throws orion::Error "FILE: at byte N: ..." (N counts from 0) for text that is not JSON, or
// that nests arrays and objects more than kMaxJsonDepth deep (at the bracket that goes over);
// "FILE: not valid JSON: ..." quoting the number for a number out of a double's range. Never
// any other exception.
nlohmann::json parse_json(std::string_view text, std::string_view file);

}  // namespace orion
