#include "serve/stop_strings.h"

#include <algorithm>

#include "text/hf/hf_components.h"

namespace orion::serve {

namespace {

// The length of `s`'s longest prefix that ends on a whole UTF-8 character: a lead byte whose
// sequence is cut off at the end is held back (at most 3 bytes).
std::size_t whole_characters(std::string_view s) {
  const std::size_t n = s.size();
  for (std::size_t back = 1; back <= std::min<std::size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return want > back ? n - back : n;
  }
  return n;
}

}  // namespace

std::string StopStrings::push(std::string_view piece) {
  if (stopped_) return "";
  held_ += piece;
  std::size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = text::hf::valid_utf8(std::string_view(held_).substr(0, first));
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is the start of a stop string.
  std::size_t keep = 0;
  for (const std::string& s : stops_)
    for (std::size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k)
      if (std::string_view(held_).substr(held_.size() - k) == std::string_view(s).substr(0, k)) {
        keep = k;
        break;
      }
  const std::size_t release = whole_characters(std::string_view(held_).substr(0, held_.size() - keep));
  std::string out = text::hf::valid_utf8(std::string_view(held_).substr(0, release));
  held_.erase(0, release);
  return out;
}

std::string StopStrings::flush() {
  if (stopped_) return "";
  std::string out = text::hf::valid_utf8(held_);
  held_.clear();
  return out;
}

}  // namespace orion::serve
