#pragma once
// A folder under the system's temporary directory that exists for one scope and is removed,
// with everything in it, when the scope ends (a compiled package used for one command).
#include <string>
#include <string_view>

namespace orion {

class TempFolder {
 public:
  // Creates "<tmp>/<prefix>-XXXXXX"; throws orion::Error with the OS reason.
  explicit TempFolder(std::string_view prefix);
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace orion
