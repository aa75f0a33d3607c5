#include "core/json_parse.h"

#include "core/error.h"

namespace orion {

std::optional<JsonParseFailure> json_depth_failure(std::string_view text) {
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
      if (++depth > kMaxJsonDepth) return JsonParseFailure{i, "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep"};
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
  return std::nullopt;
}

JsonParseFailure json_parse_failure(const nlohmann::json::exception& e) {
  // e.byte counts from 1 and points just past the offending character.
  if (const auto* p = dynamic_cast<const nlohmann::json::parse_error*>(&e))
    return {p->byte > 0 ? p->byte - 1 : 0, std::string("not valid JSON: ") + e.what()};
  // A number too large for a double ("1e999"): nlohmann reports it without a position, but its
  // message quotes the number (found by fuzz/ane_manifest_fuzz.cpp).
  return {std::nullopt, std::string("not valid JSON: ") + e.what()};
}

void throw_json_failure(std::string_view file, const JsonParseFailure& failure) {
  if (failure.offset) throw Error::at_offset(file, *failure.offset, failure.message);
  throw Error::in_file(file, failure.message);
}

std::optional<nlohmann::json> try_parse_json(std::string_view text, JsonParseFailure* failure) {
  // The depth is counted on the text before parsing: copying, comparing and printing recurse.
  if (auto deep = json_depth_failure(text)) {
    *failure = std::move(*deep);
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a parse_error, or out_of_range for "1e999"
    *failure = json_parse_failure(e);
  }
  return std::nullopt;
}

nlohmann::json parse_json(std::string_view text, std::string_view file) {
  JsonParseFailure failure;
  if (auto value = try_parse_json(text, &failure)) return std::move(*value);
  throw_json_failure(file, failure);
}

}  // namespace orion
