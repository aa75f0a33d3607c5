// GPT-2 compiled into an ANE package (model/decoder_ane_package.h, compile/ane/ane_package_writer.h)
// and run on ane-sim through runtime/package_session.h: prefill and 32 decode steps against
// the f32 CPU executor on the uncompiled graph, teacher-forced (each decode step feeds the
// next token of a fixed sequence, so every position's logits can be compared).
#include <gtest/gtest.h>

#include <iostream>

#include "model/gpt2_test_config.h"
#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

model::Gpt2Config small_config() { return model::testing::small_gpt2_config(); }

// Measured on ane-sim (printed by the tests): rel L2 7.8e-4 prefill, 8.2e-4 decode (ios18);
// 7.8e-4 and 7.7e-4 with ios16 and a 40 KB budget (about 3e-5 more than before the norms were
// rescaled against fp16 overflow, ANE034). fp16 keeps 11 bits (4.9e-4 per value).
TEST(Gpt2Package, PrefillAnd32DecodeStepsMatchTheCpu) {
  testing_util::TempDir dir;
  compile::PackageOptions po;
  const model::Gpt2Config c = small_config();
  const TensorMap w = random_weights(c, 7);
  compile_package(c, w, po, {.window = 48}, dir.path() + "/pkg");
  const Errors e = run_package(c, w, po, 40, 32, dir.path() + "/pkg");
  std::cout << "[ info ] small GPT-2, ios18: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
}

TEST(Gpt2Package, M1DialectAndASmallBudgetGiveTheSameResults) {
  // A 40 KB on-chip budget cuts the model into many kernels and chunks the head, which must
  // change nothing but the fp16 rounding of the extra boundaries.
  testing_util::TempDir dir;
  compile::PackageOptions po;
  po.dialect = compile::MilDialect::ios16;
  po.target.m1_m2 = true;
  po.target.on_chip_bytes = 40'000;
  const model::Gpt2Config c = small_config();
  const TensorMap w = random_weights(c, 7);
  compile_package(c, w, po, {.window = 32}, dir.path() + "/pkg");
  const Errors e = run_package(c, w, po, 20, 4, dir.path() + "/pkg");
  std::cout << "[ info ] small GPT-2, ios16, 40 KB budget: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
  const compile::PackageManifest m = compile::read_manifest(dir.path() + "/pkg");
  int kernels = 0;
  for (const compile::PackageStep& s : m.program("prefill").steps) kernels += s.placement == compile::Placement::ane;
  EXPECT_GT(kernels, 4);
  for (const compile::PackageProgram& p : m.programs)
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement == compile::Placement::ane) {
        EXPECT_LE(s.weight_bytes, 40'000) << s.name;
      }
    }
}

TEST(Gpt2Package, EveryKernelRoundTripsThroughTheMilParserInBothDialects) {
  const model::Gpt2Config c = small_config();
  const TensorMap w = random_weights(c, 7);
  for (compile::MilDialect d : {compile::MilDialect::ios18, compile::MilDialect::ios16}) {
    testing_util::TempDir dir;
    compile::PackageOptions po;
    po.dialect = d;
    po.target.m1_m2 = d == compile::MilDialect::ios16;
    compile_package(c, w, po, {.window = 32}, dir.path() + "/pkg");
    expect_kernels_round_trip(dir.path() + "/pkg", d);
  }
}

// A package that needs more compiles than the process has left is refused before the compile
// that would go over (on the hardware, that compile would "succeed" and compute garbage).
TEST(Gpt2Package, TheRunnerRefusesACompilePastTheBudget) {
  const model::Gpt2Config c = small_config();
  const TensorMap w = random_weights(c, 7);
  testing_util::TempDir dir;
  compile_package(c, w, {}, {.window = 32}, dir.path() + "/pkg");
  // A budget of the prefill's kernels: the prefill compiles, the first decode kernel cannot.
  int prefill_kernels = 0;
  for (const compile::PackageProgram& p : compile::read_manifest(dir.path() + "/pkg").programs)
    for (const compile::PackageStep& s : p.steps) prefill_kernels += p.name == "prefill" && s.placement == compile::Placement::ane;
  device::AneSimOptions so;
  so.faithful = true;
  so.compile_budget = prefill_kernels;
  device::AneSim sim(so);
  CompileBudget budget(prefill_kernels, 0);
  PackageRunner runner(dir.path() + "/pkg", sim, 1, &budget);
  PackageSession session(runner);
  const std::vector<std::int32_t> tokens = random_tokens(8, c.vocab_size, 1);
  session.prefill(tokens);  // one kernel
  try {
    session.decode(5);  // one more
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string n = std::to_string(prefill_kernels);
    EXPECT_NE(std::string(e.what()).find("decode_ane0: compiling it would take the process past its ANE compile budget (" + n +
                                         " of " + n),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(sim.compiles(), prefill_kernels);
}

}  // namespace
}  // namespace orion::runtime
