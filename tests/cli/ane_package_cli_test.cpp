// orion compile --target ane, orion inspect, orion perplexity --device ane-sim: a whole model
// compiled into a package, shown, and scored on ane-sim against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class AnePackageCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    model_ = (dir_ / "model").string();
    ASSERT_EQ(run_orion("init -o " + model_ + " --layers 2 --dim 64 --heads 2 --context 128 --seed 3").status, 0);
  }
  std::string model_;
};

TEST_F(AnePackageCli, CompilesInspectsAndRefusesToOverwrite) {
  const std::string pkg = (dir_ / "pkg").string();
  const CliResult r = run_orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + pkg + ": 4 kernels"), std::string::npos) << r.out;  // 1 prefill + 3 decode
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "manifest.json"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "prefill_ane0" / "model.mil"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "prefill_ane0" / "weights" / "weight.bin"));
  EXPECT_TRUE(fs::exists(fs::path(pkg) / "decode_host1" / "graph.ir"));

  const CliResult again = run_orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg);
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.out.find("exists"), std::string::npos) << again.out;
  EXPECT_EQ(run_orion("compile -m " + model_ + " --target ane --seq 64 --force -o " + pkg).status, 0);

  const CliResult in = run_orion("inspect " + pkg);
  ASSERT_EQ(in.status, 0) << in.out;
  EXPECT_NE(in.out.find("program prefill: window of 64 tokens"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("program decode: window of 1 tokens"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("[stage 1] ane  prefill_ane0"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("in  0  gather_0"), std::string::npos) << in.out;  // binding order
  const CliResult js = run_orion("inspect --json " + pkg);
  ASSERT_EQ(js.status, 0);
  EXPECT_EQ(nlohmann::json::parse(js.out)["programs"].size(), 2u);
}

TEST_F(AnePackageCli, ABrokenManifestIsAnErrorNamingTheField) {
  const std::string pkg = (dir_ / "pkg").string();
  ASSERT_EQ(run_orion("compile -m " + model_ + " --target ane --seq 32 -o " + pkg).status, 0);
  const fs::path mf = fs::path(pkg) / "manifest.json";
  nlohmann::json j = nlohmann::json::parse(read(mf));
  j["programs"][0]["steps"][1]["io"]["inputs"][0]["bytes"] = 7;
  std::ofstream(mf) << j.dump();
  const CliResult r = run_orion("inspect " + pkg);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("manifest.json: at /programs/0/steps/1/io/inputs/0/bytes"), std::string::npos) << r.out;
  std::ofstream(mf) << "{\"format\": ";
  EXPECT_NE(run_orion("inspect " + pkg).out.find("not valid JSON"), std::string::npos);
  EXPECT_NE(run_orion("compile --target ane -o " + (dir_ / "x").string()).out.find("-m DIR"), std::string::npos);
}

double loss_of(const CliResult& r) {
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  return j["loss"].get<double>();
}

// The bar: perplexity on ane-sim within 1% of the CPU's. A random model's losses are
// close to log(vocab) whatever happens, so the logits tests (tests/runtime) are the sharp
// check; this one proves the command's path end to end.
TEST_F(AnePackageCli, PerplexityOnAneSimIsWithinOnePercentOfTheCpu) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog, line " + std::to_string(i) + ".\n";
  const fs::path t = dir_ / "text.txt";
  std::ofstream(t) << text;
  const std::string pkg = (dir_ / "pkg").string();
  ASSERT_EQ(run_orion("compile -m " + model_ + " --target ane --seq 64 -o " + pkg).status, 0);
  const CliResult cpu = run_orion("perplexity -m " + model_ + " -f " + t.string() + " --window 64 --json");
  const CliResult sim = run_orion("perplexity -m " + model_ + " -f " + t.string() + " --device ane-sim --package " + pkg + " --json");
  const CliResult fresh = run_orion("perplexity -m " + model_ + " -f " + t.string() + " --device ane-sim --seq 64 --json");
  ASSERT_EQ(cpu.status, 0) << cpu.out;
  ASSERT_EQ(sim.status, 0) << sim.out;
  ASSERT_EQ(fresh.status, 0) << fresh.out;
  const double lc = loss_of(cpu), ls = loss_of(sim);
  std::cout << "[ info ] loss cpu " << lc << ", ane-sim " << ls << "\n";
  EXPECT_LT(std::abs(std::exp(ls - lc) - 1), 0.01);
  EXPECT_EQ(loss_of(fresh), ls);  // the package compiled on the fly is the same
  // A window beyond the package's is refused.
  EXPECT_NE(run_orion("perplexity -m " + model_ + " -f " + t.string() + " --device ane-sim --package " + pkg + " --window 65").status, 0);
}

}  // namespace
}  // namespace orion::test
