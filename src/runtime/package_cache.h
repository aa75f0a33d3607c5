#pragma once
// The on-disk cache of compiled packages: one folder per key under a root, so that the second
// run of the same model with the same options skips compiling (`orion generate --device
// ane-sim` compiles into it on first use). The key is the caller's content hash of everything
// the package depends on (core/content_hash.h). A package appears in the cache whole or not at
// all (the writer renames its folder into place), so concurrent runs at worst compile twice.
#include <functional>
#include <string>

namespace orion::runtime {

class PackageCache {
 public:
  // $ORION_CACHE_DIR, else $XDG_CACHE_HOME/orion, else $HOME/.cache/orion; "packages" below it.
  static std::string default_root();

  explicit PackageCache(std::string root);

  struct Entry {
    std::string dir;       // the package folder
    bool hit = false;      // found, not compiled
    double compile_s = 0;  // on a miss
  };

  // The package of `key`; on a miss `compile(dir)` writes it at `dir` first.
  Entry get(const std::string& key, const std::function<void(const std::string& dir)>& compile);

  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace orion::runtime
