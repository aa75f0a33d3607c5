#include "core/json_parse.h"

#include <string>

#include "core/error.h"

namespace orion {

nlohmann::json parse_json(std::string_view text, std::string_view file) {
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
      if (++depth > kMaxJsonDepth)
        throw Error::at_offset(file, i, "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error::at_offset(file, e.byte > 0 ? e.byte - 1 : 0, std::string("not valid JSON: ") + e.what());
  } catch (const nlohmann::json::out_of_range& e) {
    // A number too large for a double ("1e999"): nlohmann reports it without a position, but
    // its message quotes the number (found by fuzz/ane_manifest_fuzz.cpp).
    throw Error::in_file(file, std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace orion
