#include "core/read_file.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace orion {

std::string read_whole_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error::from_errno(path, "cannot open", errno);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error::from_errno(path, "cannot read", errno);
  return ss.str();
}

}  // namespace orion
