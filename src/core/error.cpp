#include "core/error.h"

#include <cstring>

namespace orion {

Error Error::at_line(std::string_view file, std::int64_t line, std::int64_t column,
                     std::string_view message) {
  return Error(std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) +
               ": " + std::string(message));
}

Error Error::at_offset(std::string_view file, std::uint64_t offset, std::string_view message) {
  return Error(std::string(file) + ": at byte " + std::to_string(offset) + ": " +
               std::string(message));
}

Error Error::in_file(std::string_view file, std::string_view message) {
  return Error(std::string(file) + ": " + std::string(message));
}

Error Error::from_errno(std::string_view file, std::string_view message, int err) {
  return Error(std::string(file) + ": " + std::string(message) + ": " + std::strerror(err));
}

std::string printable(std::string_view s, bool escape_non_ascii) {
  constexpr std::size_t kMax = 200;
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || (escape_non_ascii && c >= 0x80)) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

std::string in_quotes(std::string_view s) { return "'" + printable(s) + "'"; }

}  // namespace orion
