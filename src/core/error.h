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

}  // namespace orion
