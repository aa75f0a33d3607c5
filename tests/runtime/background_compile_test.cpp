// The package runner's compile thread (runtime/package_runner.h): kernels compile in the
// background while earlier kernels run, decode's kernels while prefill runs, and a compile that
// fails surfaces at the step that needs its kernel.
#include <gtest/gtest.h>

#include <chrono>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/overlap_probe.h"
#include "model/gpt2_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;
using device::testing::OverlapProbe;

struct Package {
  testing_util::TempDir dir;
  model::Gpt2Config config = model::testing::small_gpt2_config();
  std::string path = dir.path() + "/pkg";
  Package() { compile_package(config, random_weights(config, 7), {}, {.window = 32}, path); }
  int kernels(std::string_view program) const {
    int n = 0;
    const compile::PackageManifest m = compile::read_manifest(path);
    for (const compile::PackageStep& s : m.program(program).steps)
      n += s.placement == compile::Placement::ane;
    return n;
  }
};

// The first evaluation (prefill's kernel) waits for a compile on another thread: the compile
// thread gets there with decode's kernels; compiling on use never does, and the logits are the
// same bits either way.
TEST(BackgroundCompile, DecodeKernelsCompileWhilePrefillRuns) {
  const Package pkg;
  ASSERT_GT(pkg.kernels("decode"), 0);
  const std::vector<std::int32_t> tokens = random_tokens(8, pkg.config.vocab_size, 3);
  std::vector<float> logits[2];
  for (const bool background : {true, false}) {
    device::AneSim sim;
    OverlapProbe probe(sim, background ? std::chrono::milliseconds(20'000) : std::chrono::milliseconds(300));
    PackageRunner runner(pkg.path, probe, 1, nullptr, background);
    PackageSession session(runner);
    logits[background] = session.prefill(tokens).to_floats();
    for (float v : session.decode(tokens[0]).to_floats()) logits[background].push_back(v);
    EXPECT_EQ(probe.overlapped(), background) << (background ? "background" : "on use");
    EXPECT_EQ(runner.stats().compiles, pkg.kernels("prefill") + pkg.kernels("decode"));
  }
  EXPECT_EQ(logits[0], logits[1]);
}

// --ane-prefill: the CPU decodes, so the device never compiles decode's kernels.
TEST(BackgroundCompile, APrefillOnlySessionCompilesOnlyPrefillKernels) {
  const Package pkg;
  device::AneSim sim;
  PackageRunner runner(pkg.path, sim);
  PackageSession session(runner, /*decodes=*/false);
  session.prefill(random_tokens(8, pkg.config.vocab_size, 3));
  EXPECT_EQ(sim.compiles(), pkg.kernels("prefill"));
  EXPECT_EQ(runner.stats().compiles, pkg.kernels("prefill"));
}

// A decode kernel that does not compile: prefill (which ran while it failed) is unharmed, and
// every decode fails at that kernel's step, naming its folder, never running without it.
TEST(BackgroundCompile, AFailedCompileSurfacesAtTheStepThatNeedsIt) {
  const Package pkg;
  const compile::PackageManifest m = compile::read_manifest(pkg.path);
  std::string broken;
  for (const compile::PackageStep& s : m.program("decode").steps)
    if (s.placement == compile::Placement::ane) broken = s.name;
  ASSERT_FALSE(broken.empty());
  std::ofstream(fs::path(pkg.path) / broken / "model.mil") << "program(1.3) { this is not MIL";
  device::AneSim sim;
  PackageRunner runner(pkg.path, sim);
  PackageSession session(runner);
  const Tensor pre = session.prefill(random_tokens(8, pkg.config.vocab_size, 3));
  for (float v : pre.to_floats()) ASSERT_TRUE(std::isfinite(v));
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      session.decode(1);
      ADD_FAILURE() << "decode ran without kernel " << broken;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(broken + "/model.mil"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace orion::runtime
