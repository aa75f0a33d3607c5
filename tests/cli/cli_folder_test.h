#pragma once
// The fixture the CLI tests share: a fresh folder per test, named after the test and the
// process (ctest runs tests in parallel), removed afterwards, with helpers to name, write and
// read files in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "cli/shared_fixture.h"

namespace orion::test {

class CliFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) + "_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parametrised tests: Prefix/Suite.Test/Param
    dir_ = std::filesystem::temp_directory_path() / ("orion_cli_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return path(name);
  }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

// How scripts/make_hf_folder.sh FAMILY makes its folder into DIR/m, for shared_fixture.h.
inline std::function<bool(const std::string&, std::string&)> hf_folder_maker(const std::string& family) {
  return [family](const std::string& dir, std::string& out_log) {
    const char* data = std::getenv("ORION_TEST_DATA");
    const std::string cmd = std::string("ORION=") + ORION_BIN_PATH + " TEST_DATA=" + (data ? data : "") + " " +
                            ORION_SOURCE_DIR + "/scripts/make_hf_folder.sh " + family + " " + dir + "/m 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[512];
    while (p && std::fgets(buf, sizeof buf, p)) out_log += buf;
    return p && pclose(p) == 0;
  };
}

// A copy at OUT of what scripts/make_hf_folder.sh FAMILY makes (a Hugging Face-shaped folder,
// seeded), made once per build of the CLI (shared_fixture.h); the script's output goes to `log`.
// Returns 0, or 1 when the script failed.
inline int make_hf_folder(const std::string& family, const std::string& out, std::string& log) {
  return copy_shared_fixture("hf-" + family, hf_folder_maker(family), "m", out, log) ? 0 : 1;
}

// The shared folder itself, for a test that only reads it ("" when making it failed).
inline std::string shared_hf_folder(const std::string& family, std::string& log) {
  const std::string root = shared_fixture("hf-" + family, hf_folder_maker(family), log);
  return root.empty() ? "" : root + "/m";
}

}  // namespace orion::test
