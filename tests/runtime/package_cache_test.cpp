// PackageCache: a miss compiles into the key's folder, a hit does not; keys cannot name
// folders outside the cache; the root follows ORION_CACHE_DIR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "compile/ane/ane_package.h"
#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "runtime/package_cache.h"

namespace orion::runtime {
namespace {

namespace fs = std::filesystem;

TEST(PackageCache, CompilesOnAMissOnly) {
  testing_util::TempDir root;
  PackageCache cache(root.path() + "/packages");
  int compiles = 0;
  const auto compile = [&](const std::string& dir) {
    ++compiles;
    fs::create_directories(dir);
    std::ofstream(fs::path(dir) / compile::kManifestFile) << "{}";
  };
  const auto a = cache.get("0123abcd", compile);
  EXPECT_FALSE(a.hit);
  const auto b = cache.get("0123abcd", compile);
  EXPECT_TRUE(b.hit);
  EXPECT_EQ(a.dir, b.dir);
  EXPECT_EQ(compiles, 1);
  cache.get("ffff", compile);
  EXPECT_EQ(compiles, 2);
  // A compile that fails leaves no entry: the next run compiles again.
  EXPECT_THROW(cache.get("eeee", [](const std::string&) { throw Error("no"); }), Error);
  EXPECT_FALSE(cache.get("eeee", compile).hit);
  for (const char* bad : {"", "../x", "a/b", "."}) EXPECT_THROW(cache.get(bad, compile), Error) << bad;
}

TEST(PackageCache, RootFollowsTheEnvironment) {
  ::setenv("ORION_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(PackageCache::default_root(), "/some/where/packages");
  ::unsetenv("ORION_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(PackageCache::default_root(), "/xdg/orion/packages");
  ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace orion::runtime
