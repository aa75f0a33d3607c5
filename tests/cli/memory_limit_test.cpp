// A model whose declared sizes need more memory than the machine has is refused with a message
// before anything large is allocated (core/memory_limit.h).
#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

using MemoryLimitTest = CliFolderTest;

TEST_F(MemoryLimitTest, InitRefusesAnAbsurdModel) {
  // 1000 layers of width 65536: about 5 * 10^13 weights, 200 TB as f32, on any machine too much.
  const CliResult r = run_orion("init -o " + path("m") + " --layers 1000 --dim 65536 --heads 64");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("orion init: needs 206"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this machine has"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("m/model.safetensors")));
}

TEST_F(MemoryLimitTest, LoadRefusesAnAbsurdConfigBeforeReadingTheWeights) {
  std::filesystem::create_directories(path("m"));
  write("m/config.json", R"({"model_type": "gpt2", "n_embd": 65536, "n_layer": 1024, "n_head": 64,
                             "n_positions": 1024, "vocab_size": 16000000})");
  // There is no model.safetensors: the refusal must come from config.json alone, first.
  const CliResult r = run_orion("generate -m " + path("m") + " -n 1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find(path("m/config.json") + ": needs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of memory for the weights"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
}

TEST_F(MemoryLimitTest, TheLimitCanBeLoweredForTests) {
  ASSERT_EQ(run_orion("init -o " + path("m") + " --layers 1 --dim 32 --heads 2 --context 1024").status, 0);
  // 53760 weights (215040 bytes as f32) and a key/value cache of 2 * 1024 * 32 floats (262144
  // bytes): 64 KB refuses the weights; 240 KB passes them but refuses the session's cache.
  const CliResult r = run_orion_env("ORION_MEMORY_LIMIT=64K ", "generate -m " + path("m") + " -n 1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("that $ORION_MEMORY_LIMIT allows"), std::string::npos) << r.out;
  // With room for the weights but not the session's cache of the whole context, the session refuses.
  const CliResult kv = run_orion_env("ORION_MEMORY_LIMIT=240K ", "generate -m " + path("m") + " -n 1 --prompt hi");
  EXPECT_EQ(kv.status, 1) << kv.out;
  EXPECT_NE(kv.out.find("key/value cache"), std::string::npos) << kv.out;
  EXPECT_EQ(run_orion_env("ORION_MEMORY_LIMIT=1G ", "generate -m " + path("m") + " -n 1").status, 0);
  const CliResult bad = run_orion_env("ORION_MEMORY_LIMIT=lots ", "generate -m " + path("m") + " -n 1");
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("ORION_MEMORY_LIMIT=lots: expected a number of bytes"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace orion::test
