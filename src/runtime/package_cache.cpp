#include "runtime/package_cache.h"

#include <cstdlib>
#include <filesystem>

#include "compile/ane/ane_package.h"
#include "core/error.h"
#include "core/stopwatch.h"

namespace orion::runtime {

namespace fs = std::filesystem;

std::string PackageCache::default_root() {
  fs::path base;
  if (const char* d = std::getenv("ORION_CACHE_DIR"); d && *d) base = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = fs::path(x) / "orion";
  else if (const char* h = std::getenv("HOME"); h && *h) base = fs::path(h) / ".cache" / "orion";
  else base = fs::temp_directory_path() / "orion-cache";
  return (base / "packages").string();
}

PackageCache::PackageCache(std::string root) : root_(std::move(root)) {}

PackageCache::Entry PackageCache::get(const std::string& key, const std::function<void(const std::string&)>& compile) {
  if (key.empty() || key.find_first_of("/\\.") != std::string::npos) throw Error("package cache: bad key \"" + key + "\"");
  Entry e;
  e.dir = (fs::path(root_) / key).string();
  if (fs::exists(fs::path(e.dir) / compile::kManifestFile)) {
    e.hit = true;
    return e;
  }
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error::in_file(root_, "cannot create the package cache: " + ec.message());
  Stopwatch sw;
  compile(e.dir);
  e.compile_s = sw.seconds();
  return e;
}

}  // namespace orion::runtime
