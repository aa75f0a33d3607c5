#pragma once
// Parsing untrusted JSON text (config.json, a package's manifest, checkpoint.json, metrics
// records) into a value, with a limit on nesting. nlohmann's parser is iterative, but copying,
// comparing and printing a value recurse, so a file of a million '[' parses and then overflows
// the stack when an error message prints the value (found replaying such a file through
// fuzz/gpt2_config_fuzz.cpp). No file Orion reads nests deeper than a few levels; the limit
// leaves room for what other tools add.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace orion {

inline constexpr int kMaxJsonDepth = 64;

// Why a text is not acceptable JSON: the byte (from 0) where it goes wrong when that is known,
// and the explanation.
struct JsonParseFailure {
  std::optional<std::uint64_t> offset;
  std::string message;
};

// Where `text` nests arrays and objects more than kMaxJsonDepth deep (the bracket that goes
// over), by a scan that skips strings; nullopt where it does not.
std::optional<JsonParseFailure> json_depth_failure(std::string_view text);

// The failure nlohmann's parser reports with `e` (from a parse or a SAX parse's parse_error).
JsonParseFailure json_parse_failure(const nlohmann::json::exception& e);

// orion::Error "FILE: at byte N: ..." or "FILE: ..." for `failure`.
[[noreturn]] void throw_json_failure(std::string_view file, const JsonParseFailure& failure);

// The value of `text`, or nullopt with *failure filled in: for text that is not JSON, that
// nests arrays and objects more than kMaxJsonDepth deep (at the bracket that goes over), or
// that has a number out of a double's range (no offset; the message quotes the number). Never
// throws for any text.
std::optional<nlohmann::json> try_parse_json(std::string_view text, JsonParseFailure* failure);

// The same, throwing orion::Error "FILE: at byte N: ..." or "FILE: ..." (no offset known). Never
// any other exception.
nlohmann::json parse_json(std::string_view text, std::string_view file);

}  // namespace orion
