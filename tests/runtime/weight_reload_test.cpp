// Weight reload on ane-sim: the in-place rewrite (same file, same size, new bytes, a newer
// modification time) and the probe that decides per process whether the device reloads.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"
#include "runtime/reload_probe.h"
#include "runtime/weight_reload.h"
#include "versions_job.h"

namespace orion::runtime {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ino_t inode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

TEST(WeightReload, RewritesTheWeightFileInPlace) {
  testing_util::TempDir dir;
  const std::string a = dir.path() + "/a", b = dir.path() + "/b";
  testing_job::write_version(0, a);
  testing_job::write_version(1, b);
  const std::string blob = a + "/weights/weight.bin";
  ASSERT_NE(read(blob), read(b + "/weights/weight.bin"));
  EXPECT_EQ(reload_mismatch(a, b), "");
  const ino_t before = inode(blob);
  const auto mtime = fs::last_write_time(blob);
  rewrite_weights_in_place(a, b);
  EXPECT_EQ(read(blob), read(b + "/weights/weight.bin"));
  EXPECT_EQ(inode(blob), before);  // the same file, not a replacement
  EXPECT_GT(fs::last_write_time(blob), mtime);
  // Twice in a row, faster than the file system's clock ticks: the time still moves.
  const auto mtime2 = fs::last_write_time(blob);
  rewrite_weights_in_place(a, b);
  EXPECT_GT(fs::last_write_time(blob), mtime2);
}

TEST(WeightReload, RefusesAnotherProgramOrAnotherSize) {
  testing_util::TempDir dir;
  const std::string a = dir.path() + "/a", b = dir.path() + "/b";
  testing_job::write_version(0, a);
  testing_job::write_version(1, b);
  std::ofstream(b + "/model.mil", std::ios::app) << "\n";
  EXPECT_NE(reload_mismatch(a, b).find("model.mil"), std::string::npos);
  EXPECT_THROW(rewrite_weights_in_place(a, b), Error);

  testing_job::write_version(1, b);
  std::ofstream(b + "/weights/weight.bin", std::ios::app) << "x";
  const std::string why = reload_mismatch(a, b);
  EXPECT_NE(why.find("weights/weight.bin"), std::string::npos) << why;
  try {
    rewrite_weights_in_place(a, b);
    FAIL() << "a weight file of another size was written in place";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weight.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rewrite_weights_in_place(a, dir.path() + "/missing"), Error);
}

// The probe's device and its bookkeeping, with the same compile budget.
constexpr int kProbeBudget = 5;

TEST(ReloadProbe, FindsADeviceThatRereadsTheWeights) {
  device::AneSim sim(testing_job::faithful_sim(kProbeBudget, true));
  CompileBudget budget(kProbeBudget);
  const ReloadProbeResult r = probe_weight_reload(sim, budget);
  EXPECT_TRUE(r.reloads) << r.detail;
  EXPECT_EQ(budget.compiles(), 1);
  EXPECT_EQ(sim.compiles(), 1);
  EXPECT_EQ(sim.loaded(), 0);  // the probe unloads what it loaded
  EXPECT_EQ(budget.loaded(), 0);
}

TEST(ReloadProbe, FindsADeviceThatKeepsStaleWeights) {
  device::AneSim sim(testing_job::faithful_sim(kProbeBudget, false));
  CompileBudget budget(kProbeBudget);
  const ReloadProbeResult r = probe_weight_reload(sim, budget);
  EXPECT_FALSE(r.reloads);
  EXPECT_NE(r.detail.find("stale"), std::string::npos) << r.detail;
  EXPECT_EQ(sim.loaded(), 0);
}

TEST(ReloadProbe, RunsOncePerDevice) {
  device::AneSim sim(testing_job::faithful_sim(kProbeBudget, true));
  CompileBudget budget(kProbeBudget);
  ReloadSupport support(sim, budget);
  EXPECT_EQ(sim.compiles(), 0);  // nothing until asked
  EXPECT_TRUE(support.supported());
  EXPECT_TRUE(support.supported());
  EXPECT_EQ(sim.compiles(), 1);
}

TEST(ReloadProbe, NeedsACompileFromTheBudget) {
  device::AneSim sim(testing_job::faithful_sim(kProbeBudget, true));
  CompileBudget budget(2, 0);
  budget.charge_compile("x");
  budget.charge_compile("y");
  EXPECT_THROW(probe_weight_reload(sim, budget), Error);
  EXPECT_EQ(sim.compiles(), 0);
}

// An M1/M2 device refuses an ios18 program (ANE024): the probe's kernel is written for the
// device's target, or the probe fails before it measures anything.
TEST(ReloadProbe, CompilesItsKernelForTheDevicesTarget) {
  device::AneSimOptions o;
  o.target.m1_m2 = true;
  device::AneSim sim(o);
  CompileBudget budget(kProbeBudget);
  try {
    probe_weight_reload(sim, budget);
    ADD_FAILURE() << "an ios18 probe ran on an M1/M2 device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ANE024"), std::string::npos) << e.what();
  }
  const ReloadProbeResult r = probe_weight_reload(sim, budget, o.target);
  EXPECT_TRUE(r.reloads) << r.detail;
}

}  // namespace
}  // namespace orion::runtime
