// A job that needs more compiles than the faithful device's budget (5), one kernel with 12
// successive weight versions, against the uninterrupted run on a device with room for all:
//  * with no bookkeeping the versions past the budget come back as garbage (the failure the
//    runtime exists to prevent);
//  * through VersionedKernel on a device that rereads weights: one compile, then reloads, and
//    every output bit for bit the reference's;
//  * on a device that keeps stale weights: compiles until the runtime's limit, then a loud
//    error (no supervisor) or a checkpoint and an exec with --resume (supervisor), never a
//    compile past the limit.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"
#include "runtime/supervisor.h"
#include "runtime/versioned_kernel.h"
#include "fake_exec.h"
#include "versions_job.h"

namespace orion::runtime {
namespace {

constexpr int kVersions = 12, kDeviceBudget = 5;
using Outputs = std::vector<std::vector<float>>;

const Outputs& reference() {
  static const Outputs ref = [] {
    testing_util::TempDir dir;
    return testing_job::reference_outputs(kVersions, dir.path());
  }();
  return ref;
}

// Installs versions [0, versions) through `kernel` and evaluates each.
Outputs run_versions(device::AneSim& sim, VersionedKernel& kernel, int versions, const std::string& scratch,
                     std::vector<InstallPath>* paths = nullptr) {
  Outputs out;
  for (int v = 0; v < versions; ++v) {
    const std::string staging = scratch + "/staging";
    const compile::KernelIo io = testing_job::write_version(v, staging);
    const InstallPath p = kernel.install(staging);
    if (paths) paths->push_back(p);
    out.push_back(testing_job::evaluate(sim, kernel.program(), io));
  }
  return out;
}

TEST(VersionedKernel, EveryVersionOfTheReferenceIsDistinct) {
  // Otherwise stale weights could pass for new ones.
  const Outputs& ref = reference();
  ASSERT_EQ(ref.size(), static_cast<std::size_t>(kVersions));
  for (int v = 1; v < kVersions; ++v) EXPECT_NE(ref[v], ref[v - 1]) << "version " << v;
}

TEST(VersionedKernel, WithoutBookkeepingTheFaithfulDeviceReturnsGarbagePastItsBudget) {
  testing_util::TempDir dir;
  device::AneSim sim(testing_job::faithful_sim(kDeviceBudget, true));
  const Outputs got = testing_job::unmanaged_outputs(sim, kVersions, dir.path());
  EXPECT_EQ(sim.compiles(), kVersions);  // no error anywhere: the device "succeeded"
  for (int v = 0; v < kVersions; ++v) {
    if (v < kDeviceBudget)
      EXPECT_EQ(got[v], reference()[v]) << "version " << v << " is within the budget";
    else
      EXPECT_NE(got[v], reference()[v]) << "version " << v << " is past the budget";
  }
}

TEST(VersionedKernel, ReloadsWeightsAndMatchesTheUninterruptedRunBitForBit) {
  testing_util::TempDir dir;
  device::AneSim sim(testing_job::faithful_sim(kDeviceBudget, true));
  CompileBudget budget(kDeviceBudget);
  ReloadSupport reload(sim, budget);
  std::vector<InstallPath> paths;
  Outputs got;
  {
    VersionedKernel kernel(sim, budget, reload, dir.path() + "/kernel");
    got = run_versions(sim, kernel, kVersions, dir.path(), &paths);
    EXPECT_EQ(kernel.stats().compiles, 1);
    EXPECT_EQ(kernel.stats().reloads, kVersions - 1);
  }
  EXPECT_EQ(sim.loaded(), 0);  // the kernel unloads when it goes
  EXPECT_EQ(sim.compiles(), 2);  // the first version and the probe
  EXPECT_EQ(paths.front(), InstallPath::compiled);
  EXPECT_EQ(paths.back(), InstallPath::reloaded);
  ASSERT_EQ(got.size(), reference().size());
  for (int v = 0; v < kVersions; ++v) EXPECT_EQ(got[v], reference()[v]) << "version " << v;
}

TEST(VersionedKernel, OnAStaleDeviceWithoutSupervisorStopsLoudlyAtTheLimit) {
  testing_util::TempDir dir;
  device::AneSim sim(testing_job::faithful_sim(kDeviceBudget, false));
  CompileBudget budget(kDeviceBudget);  // limit 4: v0, the probe, v1, v2
  ReloadSupport reload(sim, budget);
  VersionedKernel kernel(sim, budget, reload, dir.path() + "/kernel");
  const Outputs got = run_versions(sim, kernel, 3, dir.path());
  for (int v = 0; v < 3; ++v) EXPECT_EQ(got[v], reference()[v]) << "version " << v;
  EXPECT_FALSE(reload.supported());
  testing_job::write_version(3, dir.path() + "/staging");
  try {
    kernel.install(dir.path() + "/staging");
    FAIL() << "a compile past the runtime's limit was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sim.compiles(), budget.limit());
  EXPECT_LE(sim.compiles(), kDeviceBudget);
}

TEST(VersionedKernel, CountsCompilesMadeOutsideIt) {
  testing_util::TempDir dir;
  device::AneSim sim(testing_job::faithful_sim(kDeviceBudget, false));
  testing_job::unmanaged_outputs(sim, 3, dir.path() + "/other");  // three compiles elsewhere
  CompileBudget budget(kDeviceBudget);
  ReloadSupport reload(sim, budget);
  VersionedKernel kernel(sim, budget, reload, dir.path() + "/kernel");
  run_versions(sim, kernel, 1, dir.path());  // the fourth and last
  testing_job::write_version(1, dir.path() + "/staging");
  EXPECT_THROW(kernel.install(dir.path() + "/staging"), Error);  // the probe has no compile left
  EXPECT_EQ(sim.compiles(), 4);
}

using testing::Execed;
using testing::FakeExec;

TEST(VersionedKernel, OnAStaleDeviceAsksTheSupervisorToRestartBeforeGoingOver) {
  ::unsetenv("ORION_SUPERVISOR_RESTARTS");
  testing_util::TempDir dir;
  device::AneSim sim(testing_job::faithful_sim(kDeviceBudget, false));
  CompileBudget budget(kDeviceBudget);
  ReloadSupport reload(sim, budget);
  FakeExec exec;
  int checkpoints = 0, done = 0;
  Supervisor supervisor({"job", "--steps", "12"}, [&] { checkpoints = done; }, exec);
  VersionedKernel kernel(sim, budget, reload, dir.path() + "/kernel", &supervisor);
  try {
    for (; done < kVersions; ++done) {
      const compile::KernelIo io = testing_job::write_version(done, dir.path() + "/staging");
      kernel.install(dir.path() + "/staging");
      EXPECT_EQ(testing_job::evaluate(sim, kernel.program(), io), reference()[done]) << "version " << done;
    }
    FAIL() << "twelve versions ran on a budget of five compiles";
  } catch (const Execed& e) {
    EXPECT_EQ(e.argv, (std::vector<std::string>{"job", "--steps", "12", "--resume"}));
  }
  EXPECT_EQ(done, 3);         // v0, the probe, v1, v2 used the limit of 4
  EXPECT_EQ(checkpoints, 3);  // the checkpoint says: continue at version 3
  EXPECT_EQ(sim.compiles(), 4);
  EXPECT_EQ(sim.loaded(), 0);  // unloaded before the exec
}

}  // namespace
}  // namespace orion::runtime
