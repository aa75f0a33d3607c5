#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class Cli : public CliFolderTest {
 protected:
};

TEST_F(Cli, HelpListsSubcommandsAndExitsZero) {
  const CliResult r = run_orion("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* sub : {"init", "convert", "generate", "tokenize", "perplexity", "bench", "ops", "check", "run", "demo"})
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
}

TEST_F(Cli, EverySubcommandHasHelp) {
  for (const char* sub : {"init", "convert", "generate", "tokenize", "perplexity", "bench", "bench decode", "bench tokenize",
                          "ops", "check", "run", "demo", "compile", "inspect", "rules", "bench kernels"}) {
    const CliResult r = run_orion(std::string(sub) + " --help");
    EXPECT_EQ(r.status, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << ": " << r.out;
  }
}

TEST_F(Cli, BadUsageExitsTwo) {
  EXPECT_EQ(run_orion("").status, 2);
  EXPECT_EQ(run_orion("no-such-command").status, 2);
  EXPECT_EQ(run_orion("run").status, 2);  // missing file
  EXPECT_EQ(run_orion("demo --seq 0").status, 2);
  EXPECT_EQ(run_orion("run x.oir --numerics f64").status, 2);
}

TEST_F(Cli, OpsListsEveryOp) {
  const CliResult r = run_orion("ops");
  EXPECT_EQ(r.status, 0);
  for (const char* op : {"matmul", "layer_norm", "rms_norm", "gelu", "gather", "where", "const", "scatter_add",
                         "broadcast_to", "softmax_cross_entropy", "softmax_cross_entropy_grad"})
    EXPECT_NE(r.out.find(op), std::string::npos) << op;
}

TEST_F(Cli, CheckMissingFileNamesItAndExitsOne) {
  const CliResult r = run_orion("check " + (dir_ / "nope.oir").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("nope.oir"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "error must be one line: " << r.out;
}

TEST_F(Cli, CheckReportsLineAndColumnOfASyntaxError) {
  const std::string f = write("bad.oir",
                              "graph g {\n"
                              "  %x = input() : f32[2, 3]\n"
                              "  %y = frobnicate(%x) : f32[2, 3]\n"
                              "  return %y\n"
                              "}\n");
  const CliResult r = run_orion("check " + f);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("bad.oir:3:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("frobnicate"), std::string::npos) << r.out;
}

TEST_F(Cli, RunExecutesAGraphFile) {
  const std::string f = write("mlp.oir",
                              "graph mlp {\n"
                              "  %x = input() : f32[4, 8]\n"
                              "  %w = param() : f32[8, 3]\n"
                              "  %h = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[4, 3]\n"
                              "  %y = relu(%h) : f32[4, 3]\n"
                              "  return %y\n"
                              "}\n");
  const CliResult check = run_orion("check " + f);
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("valid"), std::string::npos) << check.out;
  const CliResult r = run_orion("run " + f + " --numerics f16 --repeat 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("%y = f32[4, 3]"), std::string::npos) << r.out;
  // relu output: the minimum is never negative.
  EXPECT_EQ(r.out.find("min -"), std::string::npos) << r.out;
}

TEST_F(Cli, DemoRunsASmallBlockAndSavesItsGraph) {
  const std::string saved = (dir_ / "block.oir").string();
  const CliResult r = run_orion("demo --seq 16 --dim 32 --heads 2 --repeat 1 --save " + saved);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("cpu f32 numerics: y = f32[16, 32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu f16 numerics: y = f32[16, 32]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("non-finite"), std::string::npos) << r.out;
  // The saved graph is valid IR text that the CLI reads back.
  const CliResult check = run_orion("check " + saved);
  EXPECT_EQ(check.status, 0) << check.out;
}

TEST_F(Cli, DemoRejectsHeadsThatDoNotDivideDim) {
  const CliResult r = run_orion("demo --dim 30 --heads 4 --repeat 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("not a multiple of heads"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
