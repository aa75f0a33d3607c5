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

}  // namespace orion
