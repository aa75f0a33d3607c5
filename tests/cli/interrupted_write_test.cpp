// A writer killed mid-write (SIGKILL: no destructor, no cleanup) leaves each file under its
// final name either as it was or complete, never torn. `orion init --force` rewrites a model
// folder through the atomic-write path; a child process runs it and is killed at several
// points of writing model.safetensors (as soon as its temporary file exists, then at a third and
// two thirds of its final size), and once more after the weights were renamed into place.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class InterruptedWriteTest : public CliFolderTest {
 protected:
  // Big enough (about 40 MB of weights) that the kill lands inside the write.
  static std::string init_args(const std::string& out, int seed) {
    return "init -o " + out + " --layers 6 --dim 384 --heads 6 --context 64 --seed " + std::to_string(seed);
  }
  static const char* bin() {
    const char* b = std::getenv("ORION_BIN");
    return b ? b : ORION_BIN_PATH;
  }

  // Starts `orion init --force` over `dir` and kills it with SIGKILL once `ready` says so (it is
  // polled every 100 microseconds); returns whether the kill came before the child finished.
  template <class Ready>
  bool init_killed_when(const std::string& dir, int seed, Ready ready) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string layers = "6", dim = "384", heads = "6", s = std::to_string(seed);
      if (!::freopen("/dev/null", "w", stdout)) ::_exit(126);
      ::execl(bin(), bin(), "init", "-o", dir.c_str(), "--layers", layers.c_str(), "--dim", dim.c_str(), "--heads",
              heads.c_str(), "--context", "64", "--seed", s.c_str(), "--force", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    bool killed = false;
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // finished first
      if (ready()) {
        ::kill(pid, SIGKILL);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return killed && WIFSIGNALED(status);
  }

  // The size of the temporary file of `name` in `dir` (".NAME.tmp.XXXXXX"), or -1.
  static std::intmax_t temp_size(const fs::path& dir, const std::string& name) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().starts_with("." + name + ".tmp."))
        return static_cast<std::intmax_t>(e.file_size(ec));
    return -1;
  }
};

TEST_F(InterruptedWriteTest, KilledInitLeavesEachFileOldOrComplete) {
  // The old model (seed 1) and, in another folder, the complete new one (seed 2) to compare with.
  ASSERT_EQ(run_orion(init_args(path("m"), 1)).status, 0);
  ASSERT_EQ(run_orion(init_args(path("new"), 2)).status, 0);
  const std::string files[] = {"model.safetensors", "config.json", "vocab.json", "merges.txt"};
  std::map<std::string, std::string> old_bytes, new_bytes;
  for (const auto& f : files) {
    old_bytes[f] = read(dir_ / "m" / f);
    new_bytes[f] = read(dir_ / "new" / f);
  }
  ASSERT_NE(old_bytes["model.safetensors"], new_bytes["model.safetensors"]);
  const auto final_size = static_cast<std::intmax_t>(new_bytes["model.safetensors"].size());

  auto check_old_or_new = [&](const std::string& when) {
    for (const auto& f : files) {
      const std::string now = read(dir_ / "m" / f);
      EXPECT_TRUE(now == old_bytes[f] || now == new_bytes[f]) << f << " is torn after a kill " << when;
    }
  };

  int kills = 0;
  for (const double fraction : {0.0, 1.0 / 3, 2.0 / 3}) {
    const std::string when = "at " + std::to_string(fraction) + " of the weights";
    const bool killed = init_killed_when(path("m"), 2, [&] {
      const std::intmax_t s = temp_size(dir_ / "m", "model.safetensors");
      return s >= 0 && static_cast<double>(s) >= fraction * static_cast<double>(final_size);
    });
    kills += killed;
    if (killed) {
      EXPECT_EQ(read(dir_ / "m" / "model.safetensors"), old_bytes["model.safetensors"]) << "killed " << when;
    }
    check_old_or_new(when);
    // What the killed writer had written is in its temporary file, which nothing removed; remove
    // it, so that the next round's poll sees only the next writer's.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "m"))
      if (e.path().filename().string().starts_with(".")) fs::remove(e.path(), ec);
    // Put the old model back for the next round (a completed run would have replaced it).
    ASSERT_EQ(run_orion(init_args(path("m"), 1) + " --force").status, 0);
  }
  // After the weights are in place (the name points at a new inode), while the smaller files are
  // written: the window is short, so this kill may come too late, which is no failure.
  struct stat before {};
  ASSERT_EQ(::stat(path("m/model.safetensors").c_str(), &before), 0);
  init_killed_when(path("m"), 2, [&] {
    struct stat now {};
    return ::stat(path("m/model.safetensors").c_str(), &now) == 0 && now.st_ino != before.st_ino;
  });
  EXPECT_EQ(read(dir_ / "m" / "model.safetensors"), new_bytes["model.safetensors"]);
  check_old_or_new("after the weights were renamed into place");
  // The kills mid-write must have landed (the file takes far longer to write than one poll).
  EXPECT_GE(kills, 2);
}

}  // namespace
}  // namespace orion::test
