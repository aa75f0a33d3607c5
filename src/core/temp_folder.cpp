#include "core/temp_folder.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace orion {

TempFolder::TempFolder(std::string_view prefix) {
  std::error_code ec;
  const auto base = std::filesystem::temp_directory_path(ec);
  const std::string pattern = ((ec ? std::filesystem::path("/tmp") : base) / (std::string(prefix) + "-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!mkdtemp(name.data())) throw Error::from_errno(pattern, "cannot create a temporary folder", errno);
  path_ = name.data();
}

TempFolder::~TempFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace orion
