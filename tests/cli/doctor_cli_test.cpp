// orion doctor where there is no Neural Engine (ORION_ANE_TESTS=0 keeps a Mac's closed too): it
// must say why, list what it would run on the hardware, and run the same checks on ane-sim
// against the CPU, labelled as such, with a JSON report whose figures are real comparisons.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class DoctorCli : public CliFolderTest {};

TEST_F(DoctorCli, WithoutAnAneSaysWhatItWouldRunAndChecksAneSimAgainstTheCpu) {
  const std::string json = path("report.json");
  const CliResult r = run_orion_env("ORION_ANE_TESTS=0 ", "doctor --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ane: not available: ORION_ANE_TESTS=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("On a Mac with a Neural Engine, orion doctor runs these checks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ane against ane-sim, relative L2 error <= 0.01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a self-check of the emulator, not a hardware result"), std::string::npos) << r.out;

  const nlohmann::json j = nlohmann::json::parse(read(json));
  EXPECT_EQ(j["format"], "orion-doctor");
  EXPECT_EQ(j["ane"]["available"], false);
  EXPECT_EQ(j["hardware"], false);
  EXPECT_EQ(j["device"], "ane-sim");
  EXPECT_EQ(j["reference"], "cpu-f32");
  EXPECT_FALSE(j["machine"]["os"].get<std::string>().empty());
  std::set<std::string> names;
  for (const auto& c : j["checks"]) {
    const std::string name = c["name"];
    names.insert(name);
    // Listed in the plan with its tolerance, then passed with a real (non-zero) difference.
    EXPECT_NE(r.out.find("  " + name + ": "), std::string::npos) << name;
    EXPECT_NE(r.out.find("  ok    " + name + ": relative L2 error"), std::string::npos) << name;
    EXPECT_EQ(c["passed"], true) << c.dump();
    ASSERT_FALSE(c["outputs"].empty()) << name;
    for (const auto& o : c["outputs"]) {
      EXPECT_GT(o["rel_l2"].get<double>(), 0.0) << name;
      EXPECT_LE(o["rel_l2"].get<double>(), c["tolerance"].get<double>()) << name;
    }
    EXPECT_GT(c["ms"]["compile"].get<double>(), 0.0) << name;
    EXPECT_GT(c["ms"]["evaluate"].get<double>(), 0.0) << name;
  }
  for (const char* want : {"program/conv-baked", "program/binding-order", "program/weight-input",
                           "program/norms-activations", "gpt2/prefill_ane0", "gpt2/decode_ane0", "llama/prefill_ane0",
                           "llama/decode_ane0"})
    EXPECT_TRUE(names.contains(want)) << want;
  EXPECT_EQ(j["weight_reload"]["ran"], true);
  EXPECT_EQ(j["compile_budget"]["compiles"].get<int>(), static_cast<int>(j["checks"].size()) + 1);
  EXPECT_EQ(j["compile_budget"]["passed"], true);
  EXPECT_EQ(j["passed"], true);
}

// The rules of M1 and M2 chips (ios16, one weight file per tensor), as --target auto picks on
// one: the programs, the packages and the probe's kernel, on ane-sim emulating them.
TEST_F(DoctorCli, TheM1AndM2RulesPassOnAneSimToo) {
  const std::string json = path("report.json");
  const CliResult r = run_orion_env("ORION_ANE_TESTS=0 ", "doctor --target m1-m2 --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read(json));
  EXPECT_EQ(j["target"], "m1-m2");
  EXPECT_EQ(j["weight_reload"]["error"], "");
  EXPECT_EQ(j["passed"], true);
  EXPECT_GE(j["checks"].size(), 11u);
}

// Off macOS the reason is the device's own: this build has no ane device.
#if !defined(__APPLE__)
TEST_F(DoctorCli, DryRunNamesWhyThereIsNoAneAndRunsNothing) {
  const std::string json = path("report.json");
  const CliResult r = run_orion("doctor --dry-run --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ane: not available: device ane: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  program/conv-baked: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  llama/decode_ane0: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--dry-run: nothing was run"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  ok "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(json));
}
#endif

TEST_F(DoctorCli, AReportInAMissingFolderIsRefusedBeforeAnythingRuns) {
  const CliResult r = run_orion_env("ORION_ANE_TESTS=0 ", "doctor --json " + path("no/such/folder/report.json"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find(path("no/such/folder")), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Running them"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
