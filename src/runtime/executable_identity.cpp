#include "runtime/executable_identity.h"

#include <climits>
#include <cstdint>

#include "core/content_hash.h"
#include "core/error.h"
#include "core/mapped_file.h"

#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

namespace orion::runtime {

namespace {

std::string executable_path() {
#if defined(__linux__)
  return "/proc/self/exe";
#elif defined(__APPLE__)
  char buf[PATH_MAX];
  std::uint32_t size = sizeof buf;
  return _NSGetExecutablePath(buf, &size) == 0 ? std::string(buf) : std::string();
#else
  return {};
#endif
}

std::string compute() {
  const std::string path = executable_path();
  if (path.empty()) return {};
  try {
    ContentHasher h;
    h.update(MappedFile::open(path)->bytes());
    return h.hex();
  } catch (const Error&) {
    return {};  // unreadable: keys fall back to the package version
  }
}

}  // namespace

const std::string& executable_identity() {
  static const std::string id = compute();
  return id;
}

}  // namespace orion::runtime
