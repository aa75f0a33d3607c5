#pragma once
// Orion's one exception type. Every message names where the problem is (a file with a line
// and column or a byte offset, a tensor, an op) and what is wrong, so that the CLI can print
// it on one line and exit 1.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace orion {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}

  // "FILE:LINE:COL: MESSAGE" (lines and columns count from 1).
  static Error at_line(std::string_view file, std::int64_t line, std::int64_t column,
                       std::string_view message);
  // "FILE: at byte OFFSET: MESSAGE".
  static Error at_offset(std::string_view file, std::uint64_t offset, std::string_view message);
  // "FILE: MESSAGE".
  static Error in_file(std::string_view file, std::string_view message);
  // "FILE: MESSAGE: strerror(errno)" for a failed system call.
  static Error from_errno(std::string_view file, std::string_view message, int err);
};

// Text read from a file as it may appear in a message: control characters (and bytes that are
// not ASCII, with `escape_non_ascii`) escaped as \xNN, cut after 200 bytes, so that a hostile
// name cannot break the one-line message or make it huge.
std::string printable(std::string_view s, bool escape_non_ascii = false);
// printable(s) in single quotes.
std::string in_quotes(std::string_view s);

}  // namespace orion
