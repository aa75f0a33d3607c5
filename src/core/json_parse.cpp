#include "core/json_parse.h"

#include "core/error.h"

namespace orion {

std::optional<nlohmann::json> try_parse_json(std::string_view text, JsonParseFailure* failure) {
  // The depth is counted on the text before parsing: brackets inside strings do not count.
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // an escape: the next byte cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        *failure = {i, "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep"};
        return std::nullopt;
      }
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 and points just past the offending character.
    *failure = {e.byte > 0 ? e.byte - 1 : 0, std::string("not valid JSON: ") + e.what()};
  } catch (const nlohmann::json::out_of_range& e) {
    // A number too large for a double ("1e999"): nlohmann reports it without a position, but
    // its message quotes the number (found by fuzz/ane_manifest_fuzz.cpp).
    *failure = {std::nullopt, std::string("not valid JSON: ") + e.what()};
  }
  return std::nullopt;
}

nlohmann::json parse_json(std::string_view text, std::string_view file) {
  JsonParseFailure failure;
  if (auto value = try_parse_json(text, &failure)) return std::move(*value);
  if (failure.offset) throw Error::at_offset(file, *failure.offset, failure.message);
  throw Error::in_file(file, failure.message);
}

}  // namespace orion
