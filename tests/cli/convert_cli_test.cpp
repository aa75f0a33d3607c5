// orion convert as a user runs it: init -> convert -> generate on the converted folder, with
// the same text as the original for f32 (the same weights, mapped instead of packed), and the
// usage errors around it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class ConvertCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    const CliResult r = run_orion("init -o " + path("m") + " --layers 2 --dim 64 --heads 2 --context 64 --seed 3");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  // The generated text: what comes before the statistics line.
  static std::string text(const std::string& out) { return out.substr(0, out.find(". prompt")); }
};

TEST_F(ConvertCli, ConvertThenGenerate) {
  const CliResult q8 = run_orion("convert -m " + path("m") + " --dtype q8 --block 64 -o " + path("q8"));
  ASSERT_EQ(q8.status, 0) << q8.out;
  EXPECT_NE(q8.out.find("weights q8/64"), std::string::npos) << q8.out;
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
    EXPECT_TRUE(fs::exists(path("q8") + "/" + f)) << f;
  const CliResult g = run_orion("generate -m " + path("q8") + " -p hello -n 6 --temp 0");
  ASSERT_EQ(g.status, 0) << g.out;
  EXPECT_NE(g.out.find("fast engine, q8/64 weights mapped from the file"), std::string::npos) << g.out;
  // The graph engine runs the same folder from lazily dequantised weights.
  const CliResult graph = run_orion("generate -m " + path("q8") + " -p hello -n 6 --temp 0 --engine graph");
  ASSERT_EQ(graph.status, 0) << graph.out;

  // f32 conversion: the same weights, so greedy decoding gives the same text as the original.
  ASSERT_EQ(run_orion("convert -m " + path("m") + " --dtype f32 -o " + path("f32")).status, 0);
  const CliResult a = run_orion("generate -m " + path("m") + " -p hello -n 8 --temp 0");
  const CliResult b = run_orion("generate -m " + path("f32") + " -p hello -n 8 --temp 0");
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_EQ(text(a.out), text(b.out));
  EXPECT_NE(a.out.find("f32 weights packed"), std::string::npos) << a.out;
  EXPECT_NE(b.out.find("f32 weights mapped from the file"), std::string::npos) << b.out;
}

TEST_F(ConvertCli, Refusals) {
  ASSERT_EQ(run_orion("convert -m " + path("m") + " --dtype f16 -o " + path("f16")).status, 0);
  // A converted folder runs in its own format.
  const CliResult w = run_orion("generate -m " + path("f16") + " -p hi -n 2 --weights q8");
  EXPECT_EQ(w.status, 1) << w.out;
  EXPECT_NE(w.out.find("model.safetensors: is stored as f16"), std::string::npos) << w.out;
  const CliResult d = run_orion("bench decode -m " + path("f16") + " --dtype q8 --tokens 2 --runs 1");
  EXPECT_EQ(d.status, 1) << d.out;
  EXPECT_NE(d.out.find("is stored as f16"), std::string::npos) << d.out;
  // An existing folder needs --force.
  const CliResult again = run_orion("convert -m " + path("m") + " --dtype f16 -o " + path("f16"));
  EXPECT_EQ(again.status, 1) << again.out;
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  EXPECT_EQ(run_orion("convert -m " + path("m") + " --dtype q8 -o " + path("f16") + " --force").status, 0);
  // --block belongs to q8; a converted q8 folder converts back with a warning.
  EXPECT_EQ(run_orion("convert -m " + path("m") + " --dtype f16 --block 64 -o " + path("x")).status, 1);
  EXPECT_EQ(run_orion("convert -m " + path("m") + " --dtype q8 --block 48 -o " + path("x")).status, 2);
  const CliResult back = run_orion("convert -m " + path("f16") + " --dtype f32 -o " + path("back"));
  EXPECT_EQ(back.status, 0) << back.out;
  EXPECT_NE(back.out.find("warning"), std::string::npos) << back.out;
}

// A Llama-family folder to q4: MLX's layout, the very tensors MLX's algorithm gives (the
// independent numpy writer, tests/reference/mlx_quantize.py), decoded by the q4 kernels.
TEST_F(ConvertCli, Qwen3ToMlxFourBit) {
  const std::string init = "init --arch qwen3 -o " + path("q3") +
                           " --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 32 --hidden 256 --context 64 --vocab 300 --tied --seed 4";
  ASSERT_EQ(run_orion(init).status, 0);
  const CliResult c = run_orion("convert -m " + path("q3") + " --dtype q4 -o " + path("q4"));
  ASSERT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("q4 (MLX's 4-bit, groups of 64"), std::string::npos) << c.out;
  const std::string script = std::string("/usr/bin/python3 ") + ORION_SOURCE_DIR + "/tests/reference/mlx_quantize.py " + path("q3") +
                             " " + path("mlx") + " --bits 4 --group 64 2>&1";
  ASSERT_EQ(std::system(script.c_str()), 0) << script;
  // The same tensors, byte for byte: compared by a numpy one-liner over both files' headers and data.
  const std::string compare = std::string("/usr/bin/python3 -c \"") +
                              "import json,struct,sys\n"
                              "def t(p):\n"
                              " d=open(p,'rb').read(); n=struct.unpack('<Q',d[:8])[0]; h=json.loads(d[8:8+n]); h.pop('__metadata__',None)\n"
                              " return {k:(v['dtype'],v['shape'],d[8+n+v['data_offsets'][0]:8+n+v['data_offsets'][1]]) for k,v in h.items()}\n"
                              "a=t(sys.argv[1]); b=t(sys.argv[2]); bad=[k for k in set(a)|set(b) if a.get(k)!=b.get(k)]\n"
                              "print(len(a), 'tensors', bad); sys.exit(1 if bad or not a else 0)\" " +
                              path("q4") + "/model.safetensors " + path("mlx") + "/model.safetensors 2>&1";
  EXPECT_EQ(std::system(compare.c_str()), 0) << compare;
  const CliResult g = run_orion("generate -m " + path("q4") + " -p hello -n 4 --temp 0");
  ASSERT_EQ(g.status, 0) << g.out;
  EXPECT_NE(g.out.find("q4 (the folder's own)"), std::string::npos) << g.out;
  // The bench runs it as q4, against q8 run for run, with its error and perplexity against the
  // float folder's f16.
  std::ofstream(path("text.txt")) << "In the beginning God created the heaven and the earth.";
  const CliResult b = run_orion("bench decode -m " + path("q4") + " --against q8 --reference " + path("q3") + " --corpus " +
                                path("text.txt") + " --tokens 4 --runs 1 --probe-mb 16 --json");
  ASSERT_EQ(b.status, 0) << b.out;
  for (const char* key : {"\"dtype\": \"q4\"", "\"against\": \"q8\"", "\"error_reference\": \"the --reference folder's f16\""})
    EXPECT_NE(b.out.find(key), std::string::npos) << key << "\n" << b.out;
  EXPECT_EQ(b.out.find("\"perplexity\": null"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("\"speedup_over_against\": null"), std::string::npos) << b.out;
  // GPT-2 has no q4, and the group must be MLX's.
  const CliResult gpt2 = run_orion("convert -m " + path("m") + " --dtype q4 -o " + path("x"));
  EXPECT_EQ(gpt2.status, 1) << gpt2.out;
  EXPECT_NE(gpt2.out.find("written for the Llama family"), std::string::npos) << gpt2.out;
  EXPECT_EQ(run_orion("convert -m " + path("q3") + " --dtype q4 --group-size 48 -o " + path("x")).status, 2);
  EXPECT_EQ(run_orion("convert -m " + path("q3") + " --dtype q8 --group-size 32 -o " + path("x")).status, 1);
}

}  // namespace
}  // namespace orion::test
