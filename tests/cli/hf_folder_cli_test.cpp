// Hugging Face-shaped model folders (scripts/make_hf_folder.sh: config.json with the family's
// keys, bf16 shards with an index, the real tokenizer.json and tokenizer_config.json, a
// generation_config.json) run every command: generate, generate --chat, chat, perplexity,
// compile --target ane, generate on ane-sim, data prepare and a few train steps. Then what such
// a folder gets when something in it is wrong: one error naming the file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "test_scale.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class HfFolderCli : public CliFolderTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(HfFolderCli, EveryCommandRunsOnTheFolder) {
  const std::string family = GetParam(), m = path("m");
  std::string log;
  ASSERT_EQ(make_hf_folder(family, m, log), 0) << log;
  EXPECT_TRUE(fs::exists(m + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(m + "/model-00002-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(m + "/generation_config.json"));
  EXPECT_EQ(nlohmann::json::parse(read(m + "/config.json"))["torch_dtype"], "bfloat16");

  CliResult r = run_orion("generate -m " + m + " -p 'In the beginning' -n 8 --temp 0");
  ASSERT_EQ(r.status, 0) << r.out;
  // The fast engine and the reference executor agree on the greedy continuation.
  const CliResult g = run_orion("generate -m " + m + " -p 'In the beginning' -n 8 --temp 0 --engine graph");
  ASSERT_EQ(g.status, 0) << g.out;
  EXPECT_EQ(r.out.substr(0, r.out.find("generated")), g.out.substr(0, g.out.find("generated")));

  r = run_orion("generate -m " + m + " -p 'Say hi' --chat --system 'Be brief.' -n 4");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Say hi"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Be brief."), std::string::npos) << r.out;

  r = run_orion("chat -m " + m + " -n 3 --temp 0 < " + write("turns.txt", "Hello!\nAnd again?\n/reset\nOnce more\n"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(the conversation is forgotten)"), std::string::npos) << r.out;

  // At the small scale (the sanitizer run) Qwen2.5 stops here: its tokenizer, template and head
  // are Qwen3's, which runs the rest, and its graph's differences (biases, no q/k norms) are the
  // model and package tests'.
  if (family == "qwen2.5" && testing_util::small_scale()) return;
  // A short text: each window costs a pass through a head of up to 151k tokens (Qwen3), and a
  // few windows run every path that many do.
  std::string prose;
  for (int i = 0; i < 3; ++i) prose += "In the beginning God created the heaven and the earth. And the earth was without form.\n";
  const std::string text = write("text.txt", prose);
  r = run_orion("perplexity -m " + m + " -f " + text + " --window 16");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("tokens scored"), std::string::npos) << r.out;

  r = run_orion("compile -m " + m + " --target ane -o " + path("pkg"));
  ASSERT_EQ(r.status, 0) << r.out;
  // A prefill and one decode step.
  r = run_orion("generate -m " + m + " -p 'In the beginning' -n 2 --device ane-sim --package " + path("pkg"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ane-sim"), std::string::npos) << r.out;

  r = run_orion("data prepare -m " + m + " --in " + text + " " + text + " --out " + path("data") + " --val-fraction 0.2");
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_orion("train -m " + m + " --data " + path("data") + " --out " + path("run") + " --steps 2 --batch 1 --seq 8");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trained 2 steps"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Families, HfFolderCli, ::testing::Values("qwen3", "qwen2.5", "llama3.2", "smollm2", "tinyllama"),
                         [](const auto& p) {
                           std::string n = p.param;
                           n.erase(std::remove(n.begin(), n.end(), '.'), n.end());
                           return n;
                         });

class HfFolderErrors : public CliFolderTest {};

TEST_F(HfFolderErrors, EachGetsOneErrorNamingTheFileAndTheKey) {
  const std::string m = path("m");
  std::string log;
  ASSERT_EQ(make_hf_folder("qwen3", m, log), 0) << log;
  auto error = [&] {
    const CliResult r = run_orion("generate -m " + m + " -p hi -n 1");
    EXPECT_EQ(r.status, 1) << r.out;
    return r.out;
  };
  const std::string config = read(m + "/config.json");
  nlohmann::json j = nlohmann::json::parse(config);
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  std::ofstream(m + "/config.json") << j.dump();
  std::string e = error();
  EXPECT_NE(e.find(m + "/config.json: key \"rope_scaling\" has rope_type \"yarn\""), std::string::npos) << e;
  j = nlohmann::json::parse(config);
  j["quantization_config"] = {{"quant_method", "awq"}};
  std::ofstream(m + "/config.json") << j.dump();
  e = error();
  EXPECT_NE(e.find(m + "/config.json: key \"quantization_config\" has quant_method \"awq\""), std::string::npos) << e;
  std::ofstream(m + "/config.json") << config;

  const std::string index = read(m + "/model.safetensors.index.json");
  fs::rename(m + "/model-00002-of-00002.safetensors", path("aside"));
  e = error();
  EXPECT_NE(e.find("model.safetensors.index.json: \"weight_map\": tensor "), std::string::npos) << e;
  EXPECT_NE(e.find("is in the shard model-00002-of-00002.safetensors, which is missing"), std::string::npos) << e;
  fs::rename(path("aside"), m + "/model-00002-of-00002.safetensors");

  nlohmann::json ij = nlohmann::json::parse(index);
  ij["weight_map"]["lm_head.weight"] = "model-00001-of-00002.safetensors";
  std::ofstream(m + "/model.safetensors.index.json") << ij.dump();
  e = error();
  EXPECT_NE(e.find("model-00001-of-00002.safetensors: has no tensor lm_head.weight"), std::string::npos) << e;
  std::ofstream(m + "/model.safetensors.index.json") << index;

  nlohmann::json tj = nlohmann::json::parse(read(m + "/tokenizer.json"));
  tj["model"]["type"] = "Unigram";
  std::ofstream(m + "/tokenizer.json") << tj.dump();
  e = error();
  EXPECT_NE(e.find(m + "/tokenizer.json: model.type \"Unigram\" is not supported (BPE)"), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::test
