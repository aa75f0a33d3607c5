// GGUF files through the commands, `-m FILE.gguf` where `-m DIR` is taken: a Hugging
// Face-shaped SmolLM2 folder (scripts/make_hf_folder.sh: Llama's architecture, whose query and
// key rows the file permutes, GPT-2's vocabulary and a ChatML template) made into a GGUF file
// with its bf16 weights as they are (tests/reference/make_gguf.py), so that the file and the
// folder are the same model, gives the folder's output for generate (greedy), generate --chat
// (the prompt rendered from tokenizer.chat_template) and perplexity, and runs chat, perplexity
// of JSONL chat records and data prepare; a small Q4_K Qwen3 file runs on the fast engine and the
// graph executor alike; inspect shows a file; train refuses one; a cut file is one error line
// naming it. (Qwen3's and Llama 3's real tokenizers in GGUF are test_model's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "model/gguf_test_util.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class GgufCli : public CliFolderTest {
 protected:
  // The folder (the Hugging Face-shaped SmolLM2, or a small Qwen3 of width 256 with GPT-2's
  // byte-level tokenizer), and its GGUF file with the given make_gguf.py options.
  void make(bool hf, const std::vector<std::string>& options) {
    folder_ = path("m");
    file_ = path("m.gguf");
    std::string log;
    if (hf) {
      folder_ = shared_hf_folder("smollm2", log);  // only read: no copy
      ASSERT_FALSE(folder_.empty()) << log;
    } else {
      model::testing::write_init_folder(folder_, model::testing::small_gguf_config("qwen3", 256, 64, 512), 4);
    }
    ASSERT_FALSE(model::testing::run_make_gguf(folder_, file_, options).empty());
  }
  // Output up to the stop line (which carries timings).
  static std::string text_of(const CliResult& r) { return r.out.substr(0, r.out.find("generated the requested")); }

  std::string folder_, file_;
};

TEST_F(GgufCli, TheFileRunsAsItsFolder) {
  make(true, {"--matrices", "BF16"});
  const std::string prompt = " -p 'In the beginning' -n 8 --temp 0";
  const CliResult f = run_orion("generate -m " + folder_ + prompt), g = run_orion("generate -m " + file_ + prompt);
  ASSERT_EQ(g.status, 0) << g.out;
  ASSERT_EQ(f.status, 0) << f.out;
  EXPECT_EQ(text_of(g), text_of(f));

  const std::string chat = " -p 'Say hi' --chat --system 'Be brief.' -n 4 --temp 0";
  const CliResult fc = run_orion("generate -m " + folder_ + chat), gc = run_orion("generate -m " + file_ + chat);
  ASSERT_EQ(gc.status, 0) << gc.out;
  EXPECT_NE(gc.out.find("<|im_start|>system\nBe brief.<|im_end|>"), std::string::npos) << gc.out;
  EXPECT_EQ(text_of(gc), text_of(fc));

  const std::string turns = write("turns.txt", "Hello!\n/reset\nOnce more\n");
  CliResult r = run_orion("chat -m " + file_ + " -n 3 --temp 0 < " + turns);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(the conversation is forgotten)"), std::string::npos) << r.out;

  const std::string text = write("text.txt", "In the beginning God created the heaven and the earth.\n");
  const std::string ppl = " -f " + text + " --window 16";
  const CliResult pf = run_orion("perplexity -m " + folder_ + ppl), pg = run_orion("perplexity -m " + file_ + ppl);
  ASSERT_EQ(pg.status, 0) << pg.out;
  // The same loss and perplexity; the line ends with the time it took.
  EXPECT_EQ(pg.out.substr(0, pg.out.find(" numerics")), pf.out.substr(0, pf.out.find(" numerics")));
  // Chat records through the file's template.
  const std::string jsonl = write("chat.jsonl", R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})" "\n");
  r = run_orion("perplexity -m " + file_ + " --data " + jsonl);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 records, "), std::string::npos) << r.out;

  r = run_orion("data prepare -m " + file_ + " --in " + text + " " + text + " --out " + path("data") + " --val-fraction 0.2");
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_orion("train -m " + file_ + " --data " + path("data") + " --out " + path("run") + " --steps 1 --batch 1 --seq 8");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(file_ + ": is a GGUF file; training starts from a model folder"), std::string::npos) << r.out;
}

TEST_F(GgufCli, AQuantisedFileRunsOnBothEnginesAndShowsItself) {
  make(false, {"--matrices", "Q4_K", "--embed", "Q6_K"});
  const std::string prompt = " -p 'In the beginning' -n 6 --temp 0";
  const CliResult fast = run_orion("generate -m " + file_ + prompt), graph = run_orion("generate -m " + file_ + prompt + " --engine graph");
  ASSERT_EQ(fast.status, 0) << fast.out;
  ASSERT_EQ(graph.status, 0) << graph.out;
  EXPECT_EQ(text_of(fast), text_of(graph));

  CliResult r = run_orion("inspect " + file_);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokenizer.ggml.tokens                        300 string ['!', '\"', '#'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.1.ffn_down.weight            Q4_K  [256, 512]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q6_K: 2 tensors"), std::string::npos) << r.out;  // the embedding and the head
  r = run_orion("inspect --json " + file_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("metadata").at("qwen3.block_count").at("value"), 2);
}

TEST_F(GgufCli, ACutFileIsOneErrorNamingIt) {
  make(false, {"--matrices", "Q8_0"});
  fs::resize_file(file_, fs::file_size(file_) / 2);
  const CliResult r = run_orion("generate -m " + file_ + " -p hi -n 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out.rfind("orion: error: " + file_ + ": tensor '", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("run past the end of the file"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

}  // namespace
}  // namespace orion::test
