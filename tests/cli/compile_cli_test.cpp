// orion compile: one GPT-2 block written as an ANE kernel folder, in both dialects, and the
// targets it refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class CompileCli : public CliFolderTest {
 protected:
};

// 64 channels need 384 columns for a 49,152-byte surface.
TEST_F(CompileCli, WritesABlockKernelFolder) {
  const fs::path out = dir_ / "k";
  const CliResult r = run_orion("compile --dim 64 --heads 2 --seq 32 -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("sequence 32 padded to 384"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in  x        [1, 64, 1, 32] padded to [1, 64, 1, 384], 49152 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out y "), std::string::npos) << r.out;
  EXPECT_NE(read(out / "model.mil").find("func main<ios18>(tensor<fp16, [1, 64, 1, 384]> x)"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "weights" / "weight.bin"));

  const fs::path m1 = dir_ / "m1";
  const CliResult r16 = run_orion("compile --dim 64 --heads 2 --seq 32 --dialect ios16 --m1-m2 -o " + m1.string());
  ASSERT_EQ(r16.status, 0) << r16.out;
  EXPECT_NE(read(m1 / "model.mil").find("main<ios16>"), std::string::npos);
}

// --model takes the block's weights from the chosen layer: two layers give two blobs.
TEST_F(CompileCli, TakesTheWeightsOfAModelLayer) {
  const fs::path m = dir_ / "model";
  ASSERT_EQ(run_orion("init -o " + m.string() + " --layers 2 --dim 64 --heads 2 --context 64").status, 0);
  for (int layer : {0, 1}) {
    const CliResult r = run_orion("compile --model " + m.string() + " --layer " + std::to_string(layer) +
                                  " --seq 32 -o " + (dir_ / ("k" + std::to_string(layer))).string());
    ASSERT_EQ(r.status, 0) << r.out;
  }
  const std::string w0 = read(dir_ / "k0" / "weights" / "weight.bin"), w1 = read(dir_ / "k1" / "weights" / "weight.bin");
  EXPECT_EQ(w0.size(), w1.size());
  EXPECT_NE(w0, w1);
  const CliResult past = run_orion("compile --model " + m.string() + " --layer 2 -o " + (dir_ / "k2").string());
  EXPECT_EQ(past.status, 1);
  EXPECT_NE(past.out.find("has 2 layers"), std::string::npos) << past.out;
}

TEST_F(CompileCli, RefusesWhatTheTargetRejects) {
  const CliResult dialect = run_orion("compile --dim 64 --heads 2 --m1-m2 -o " + (dir_ / "a").string());
  EXPECT_EQ(dialect.status, 1);
  EXPECT_NE(dialect.out.find("ANE024"), std::string::npos) << dialect.out;
  // head_dim 16: matmul inner dimension not a multiple of 32 on M1/M2.
  const CliResult inner =
      run_orion("compile --dim 64 --heads 4 --dialect ios16 --m1-m2 -o " + (dir_ / "b").string());
  EXPECT_EQ(inner.status, 1);
  EXPECT_NE(inner.out.find("ANE013"), std::string::npos) << inner.out;
  EXPECT_FALSE(fs::exists(dir_ / "b" / "model.mil"));
  EXPECT_EQ(run_orion("compile --arch llama -o " + (dir_ / "c").string()).status, 2);
}

}  // namespace
}  // namespace orion::test
