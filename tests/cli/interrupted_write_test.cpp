// A writer killed mid-write (SIGKILL: no destructor, no cleanup) leaves the folder under its
// final name either as it was or complete, never torn or mixed. `orion init --force` rewrites a
// model folder as a whole (core/atomic_folder.h); a child process runs it and is killed at
// several points of writing model.safetensors in the temporary folder (as soon as it exists,
// then at a third and two thirds of its final size), and once more when the last file is there.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

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

  // The temporary folders beside `dir` (".DIR.tmp.XXXXXX"): a writer's, or what killed ones left.
  static std::vector<fs::path> temp_folders(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir.parent_path(), ec))
      if (e.path().filename().string().starts_with("." + dir.filename().string() + ".tmp.")) out.push_back(e.path());
    return out;
  }
  // The size of the file `name` in the temporary folder beside `dir`, or -1.
  static std::intmax_t temp_size(const fs::path& dir, const std::string& name) {
    std::error_code ec;
    for (const fs::path& t : temp_folders(dir))
      if (const auto size = fs::file_size(t / name, ec); !ec) return static_cast<std::intmax_t>(size);
    return -1;
  }
  static void remove_leftovers(const fs::path& dir) {
    std::error_code ec;
    for (const fs::path& t : temp_folders(dir)) fs::remove_all(t, ec);
  }
};

TEST_F(InterruptedWriteTest, KilledInitLeavesTheOldFolderOrTheCompleteNewOne) {
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

  // Every file old, or every file new: no mixture, nothing torn.
  auto check_old_or_new = [&](const std::string& when) {
    std::map<std::string, std::string> now;
    for (const auto& f : files) now[f] = read(dir_ / "m" / f);
    EXPECT_TRUE(now == old_bytes || now == new_bytes) << "the folder is torn or mixed after a kill " << when;
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
    // What the killed writer had written is in its temporary folder, which nothing removed;
    // remove it, so that the next round's poll sees only the next writer's.
    remove_leftovers(dir_ / "m");
    // Put the old model back for the next round (a completed run would have replaced it).
    ASSERT_EQ(run_orion(init_args(path("m"), 1) + " --force").status, 0);
  }
  // When the last file is in the temporary folder, just before or while it takes the folder's
  // place: the window is short, so this kill may come too late, which is no failure.
  init_killed_when(path("m"), 2, [&] { return temp_size(dir_ / "m", "merges.txt") >= 0; });
  check_old_or_new("when the last file was written");
  remove_leftovers(dir_ / "m");
  // The kills mid-write must have landed (the file takes far longer to write than one poll).
  EXPECT_GE(kills, 2);
}

// init writes the folder whole, so it will not take a folder holding files of other kinds.
TEST_F(InterruptedWriteTest, InitRefusesAFolderWithOtherFiles) {
  fs::create_directories(dir_ / "m");
  std::ofstream(dir_ / "m" / "notes.txt") << "mine";
  const auto r = run_orion(init_args(path("m"), 1) + " --force");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(path("m/notes.txt") + ": is not a model folder's file"), std::string::npos) << r.out;
  EXPECT_EQ(read(dir_ / "m" / "notes.txt"), "mine");
}

}  // namespace
}  // namespace orion::test
