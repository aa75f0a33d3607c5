// The exec-restart path end to end: the restart_job executable runs the versions job on a
// faithful ane-sim with a compile budget of 5 and stale reloads, checkpointing and exec'ing
// itself with --resume whenever the next compile would go over; its final outputs must be
// the uninterrupted run's, bit for bit, after the expected number of processes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "core/testing_temp_dir.h"
#include "runtime/compile_budget.h"
#include "versions_job.h"

namespace orion::runtime {
namespace {

int run_job(const std::string& args) {
  const std::string cmd = std::string(RESTART_JOB_PATH) + " " + args;
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RestartJob, ExecsItselfThroughTheBudgetAndMatchesTheUninterruptedRun) {
  constexpr int kVersions = 10, kBudget = 5;
  testing_util::TempDir dir, ref_dir;
  ASSERT_EQ(run_job(dir.path() + " " + std::to_string(kVersions) + " " + std::to_string(kBudget)), 0);
  const testing_job::JobState got = testing_job::load_state(dir.path() + "/outputs.bin");
  const auto want = testing_job::reference_outputs(kVersions, ref_dir.path());
  ASSERT_EQ(got.outputs.size(), want.size());
  for (int v = 0; v < kVersions; ++v) EXPECT_EQ(got.outputs[v], want[v]) << "version " << v;
  // Each process spends one compile of its limit on the reload probe and the rest on versions.
  const int per_process = CompileBudget(kBudget).limit() - 1;
  EXPECT_EQ(got.processes, (kVersions + per_process - 1) / per_process);
  EXPECT_GT(got.processes, 1);
}

TEST(RestartJob, RunsInOneProcessWhereTheDeviceReloads) {
  constexpr int kVersions = 10;
  testing_util::TempDir dir, ref_dir;
  ASSERT_EQ(run_job(dir.path() + " " + std::to_string(kVersions) + " 5 --reload-reads-weights"), 0);
  const testing_job::JobState got = testing_job::load_state(dir.path() + "/outputs.bin");
  EXPECT_EQ(got.processes, 1);
  EXPECT_EQ(got.outputs, testing_job::reference_outputs(kVersions, ref_dir.path()));
}

TEST(RestartJob, CompletesWhenTheProbeNeverFitsBesideAVersion) {
  // A budget of 2 leaves a limit of 1: each process compiles one version, and the reload
  // probe, which would need a second compile, waits for a process that can afford it.
  constexpr int kVersions = 3;
  testing_util::TempDir dir, ref_dir;
  ASSERT_EQ(run_job(dir.path() + " " + std::to_string(kVersions) + " 2"), 0);
  const testing_job::JobState got = testing_job::load_state(dir.path() + "/outputs.bin");
  EXPECT_EQ(got.processes, kVersions);
  EXPECT_EQ(got.outputs, testing_job::reference_outputs(kVersions, ref_dir.path()));
}

}  // namespace
}  // namespace orion::runtime
