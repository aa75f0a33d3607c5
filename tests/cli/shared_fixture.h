#pragma once
// Folders that many CLI tests start from (a model trained for a while, a Hugging Face-shaped
// folder), made once per build of the CLI and shared by the tests, which ctest runs in separate
// processes, some at the same time. Each is made under a lock into a folder beside its place and
// renamed there when whole, so that a test waits for another making it rather than making it
// again, and one that fails or is killed half way leaves nothing behind. The place, in the build
// folder's test-fixtures/, is named after the CLI binary's size and time, so a rebuilt CLI makes
// its fixtures afresh.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "cli/run_cli.h"

namespace orion::test {

// The folder `name`, made by `make(dir)` (which returns false on failure, the reason in `log`)
// the first time any test asks for it. Returns "" when making it failed.
inline std::string shared_fixture(const std::string& name, const std::function<bool(const std::string& dir, std::string& log)>& make,
                                  std::string& log) {
  namespace fs = std::filesystem;
  struct stat st{};
  const std::string bin = std::getenv("ORION_BIN") ? std::getenv("ORION_BIN") : ORION_BIN_PATH;
  if (::stat(bin.c_str(), &st) != 0) {
    log = bin + ": not built";
    return "";
  }
  // In the build folder (bin/..; the build's even when $ORION_BIN names another CLI), one
  // folder per build of the CLI; those of earlier builds go.
  const fs::path fixtures = fs::path(ORION_BIN_PATH).parent_path().parent_path() / "test-fixtures";
  const std::string key = std::to_string(st.st_size) + "_" + std::to_string(st.st_mtim.tv_sec) + "_" +
                          std::to_string(st.st_mtim.tv_nsec);
  const fs::path root = fixtures / key;
  if (!fs::exists(root)) {
    std::error_code ec;
    for (const auto& old : fs::directory_iterator(fixtures, ec))
      if (old.path().filename() != key) fs::remove_all(old.path(), ec);
    fs::create_directories(root);
  }
  const fs::path done = root / name;
  const int lock = ::open((root / (name + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    log = (root / (name + ".lock")).string() + ": cannot lock";
    if (lock >= 0) ::close(lock);
    return "";
  }
  bool ok = fs::exists(done);
  if (!ok) {
    const fs::path part = root / (name + ".part");
    fs::remove_all(part);
    fs::create_directories(part);
    ok = make(part.string(), log);
    if (ok) fs::rename(part, done);
    else fs::remove_all(part);
  }
  ::close(lock);  // releases the lock
  return ok ? done.string() : "";
}

// A copy at `to` of the folder `part` of the fixture `name` (tests change their folders), or
// false with `log`.
inline bool copy_shared_fixture(const std::string& name,
                                const std::function<bool(const std::string& dir, std::string& log)>& make,
                                const std::string& part, const std::string& to, std::string& log) {
  const std::string from = shared_fixture(name, make, log);
  if (from.empty()) return false;
  std::filesystem::copy(from + "/" + part, to, std::filesystem::copy_options::recursive);
  return true;
}

}  // namespace orion::test
