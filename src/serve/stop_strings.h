#pragma once
// Generated text as the API hands it out: OpenAI's stop sequences honoured (the text before
// the first one is released, the stop string and everything after it never are), and only
// whole UTF-8 characters released, as a token's piece may end inside one. Text that may still
// become a stop string, or the rest of a character, is held back until the next piece says.
#include <string>
#include <string_view>
#include <vector>

namespace orion::serve {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Appends a piece; returns what can be released now. After a stop string, stopped() and
  // nothing more is released.
  std::string push(std::string_view piece);
  // The end of generation: what was held back, invalid UTF-8 replaced by U+FFFD.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace orion::serve
