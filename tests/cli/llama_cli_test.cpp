// Llama models through the command line as a user runs them: orion init --arch llama (with the
// byte-level default vocabulary and with a SentencePiece vocabulary from orion tokenizer train),
// generate on the fast engine (by default) and the graph engine, perplexity, bench decode and
// prefill, and the clear errors of the paths that are GPT-2 only so far.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class LlamaCli : public CliFolderTest {
 protected:
  CliResult init(const std::string& args) { return run_orion("init --arch llama -o " + path("m") + " " + args); }
};

TEST_F(LlamaCli, InitWritesAHuggingFaceLlamaFolder) {
  const CliResult r = init("--layers 2 --dim 64 --heads 4 --kv-heads 2 --context 64 --seed 5");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("llama, 2 layers, dim 64, 4 heads (2 key/value), hidden 192"), std::string::npos) << r.out;
  const auto c = nlohmann::json::parse(read(path("m/config.json")));
  EXPECT_EQ(c.at("model_type"), "llama");
  EXPECT_EQ(c.at("num_key_value_heads"), 2);
  EXPECT_EQ(c.at("intermediate_size"), 192);  // 8/3 x 64 rounded up to a multiple of 32
  EXPECT_EQ(c.at("vocab_size"), 257);         // the byte-level vocabulary
  EXPECT_EQ(c.at("bos_token_id"), 256);
  EXPECT_EQ(c.at("tie_word_embeddings"), false);
  EXPECT_TRUE(fs::exists(path("m/vocab.json")));
  const std::string st = read(path("m/model.safetensors"));
  EXPECT_NE(st.find("\"lm_head.weight\""), std::string::npos);
  EXPECT_NE(st.find("\"model.layers.1.self_attn.k_proj.weight\":{\"dtype\":\"F32\",\"shape\":[32,64]"), std::string::npos);

  ASSERT_EQ(run_orion("init --arch llama -o " + path("t") + " --layers 1 --dim 32 --heads 2 --tied").status, 0);
  EXPECT_EQ(read(path("t/model.safetensors")).find("lm_head.weight"), std::string::npos);
}

// A Hugging Face preset gives the family's architecture; the sizes given beside it win.
TEST_F(LlamaCli, APresetKeepsTheSizesGivenBesideIt) {
  const CliResult r = run_orion("init --preset qwen3-0.6b --layers 1 --dim 64 --heads 4 --kv-heads 2 --head-dim 16 "
                                "--hidden 96 --context 64 --vocab 300 -o " + path("q"));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json c = nlohmann::json::parse(read(path("q") + "/config.json"));
  EXPECT_EQ(c["model_type"], "qwen3");
  EXPECT_EQ(c["num_hidden_layers"], 1);
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["head_dim"], 16);
  EXPECT_EQ(c["vocab_size"], 300);
  EXPECT_EQ(c["rope_theta"], 1e6);             // the preset's
  EXPECT_EQ(c["tie_word_embeddings"], true);  // the preset's
  const CliResult l = run_orion("init --preset llama3.2-1b --layers 1 --dim 64 --heads 4 --kv-heads 2 --hidden 96 "
                                "--context 64 --vocab 300 -o " + path("l"));
  ASSERT_EQ(l.status, 0) << l.out;
  const nlohmann::json lc = nlohmann::json::parse(read(path("l") + "/config.json"));
  EXPECT_EQ(lc["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(lc["rope_scaling"]["factor"], 32.0);
  EXPECT_EQ(lc["num_hidden_layers"], 1);
}

TEST_F(LlamaCli, GeneratesOnTheFastEngineByDefaultAndScores) {
  ASSERT_EQ(init("--layers 2 --dim 64 --heads 4 --kv-heads 2 --context 64 --seed 5").status, 0);
  const std::string gen = "generate -m " + path("m") + " -p 'Once upon' -n 12 --temp 0";
  CliResult r = run_orion(gen);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("Once upon", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("fast engine, f32 weights packed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tok/s;"), std::string::npos) << r.out;
  // Greedy decoding is deterministic, and the graph engine (the reference) picks the same tokens.
  const std::string text12 = r.out.substr(0, r.out.find('\n'));
  r = run_orion(gen + " --engine graph");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("graph engine, f32 numerics"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), text12);
  for (const char* w : {"f16", "q8"}) {
    r = run_orion(gen + " --weights " + w);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(std::string("fast engine, ") + w + " weights packed"), std::string::npos) << r.out;
  }

  const std::string text = write("t.txt", std::string(300, 'a') + " the quick brown fox\n");
  r = run_orion("perplexity -m " + path("m") + " -f " + text + " --window 40 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  // BOS then 321 bytes: every token but the first is scored. An untrained model of 257 tokens is
  // near-uniform: loss close to log(257).
  EXPECT_EQ(j.at("tokens"), 321);
  EXPECT_NEAR(j.at("loss").get<double>(), std::log(257.0), 0.5);
}

TEST_F(LlamaCli, BenchDecodeTakesALlamaFolder) {
  ASSERT_EQ(init("--layers 2 --dim 64 --heads 4 --kv-heads 2 --context 64 --seed 5 --tied").status, 0);
  const CliResult r = run_orion("bench decode -m " + path("m") + " --dtype q8 --tokens 8 --runs 1 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("dtype"), "q8");
  EXPECT_EQ(j.at("weights_mapped"), false);
  EXPECT_GT(j.at("tok_per_s").get<double>(), 0);
  EXPECT_GT(j.at("achieved_gbps").get<double>(), 0);
  EXPECT_GT(j.at("measured_bandwidth_gbps").get<double>(), 0);
  EXPECT_GT(j.at("bandwidth_fraction").get<double>(), 0);
  // Tied: the head ([257, 64]) and per layer q/k/v ([64 + 2 * 32, 64]), o ([64, 64]), gate/up
  // ([2 * 192, 64]) and down ([64, 192]) as int8 with an f32 scale per 32 weights.
  const double weights = 257 * 64 + 2 * (128 * 64 + 64 * 64 + 384 * 64 + 64 * 192);
  EXPECT_EQ(j.at("bytes_per_token").get<double>(), weights + weights / 32 * 4);
  // q8 against f32 on a small random model: close, not equal.
  const double err = j.at("logits_rel_error").get<double>();
  EXPECT_GT(err, 0);
  EXPECT_LT(err, 0.05);
  EXPECT_GT(j.at("top1_agreement").get<double>(), 0.5);
}

TEST_F(LlamaCli, BenchPrefillTakesALlamaFolder) {
  ASSERT_EQ(init("--layers 2 --dim 64 --heads 4 --kv-heads 2 --context 64 --seed 5").status, 0);
  const std::string bench = "bench prefill -m " + path("m") + " --runs 1 --threads 1 --json --prompt ";
  CliResult r = run_orion(bench + "40");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("dtype"), "f32");
  EXPECT_EQ(j.at("batched"), true);
  EXPECT_EQ(j.at("prompt"), 40);
  EXPECT_GT(j.at("tok_per_s").get<double>(), 0);
  EXPECT_GT(j.at("achieved_gflops").get<double>(), 0);
  EXPECT_GT(j.at("measured_peak_gflops").get<double>(), 0);
  // The peak is probed before and after the one run, and the run's fraction is taken against
  // their mean, which is also the median of two.
  EXPECT_LE(j.at("measured_peak_min_gflops").get<double>(), j.at("measured_peak_gflops").get<double>());
  EXPECT_GE(j.at("measured_peak_max_gflops").get<double>(), j.at("measured_peak_gflops").get<double>());
  const double fraction = j.at("achieved_gflops").get<double>() / j.at("measured_peak_gflops").get<double>();
  EXPECT_NEAR(j.at("peak_fraction").get<double>(), fraction, 1e-3 * fraction + 1e-4);
  EXPECT_EQ(j.at("peak_fraction_min"), j.at("peak_fraction"));
  EXPECT_EQ(j.at("peak_fraction_max"), j.at("peak_fraction"));
  // From the shapes, per layer and token: q/k/v [64 + 2 * 32, 64], o [64, 64], gate/up
  // [2 * 192, 64], down [64, 192]: 2 * 49152 flops. Attention, one block of 40 queries x 40
  // keys over 4 heads of 16: 2 * 2 * 1600 * 64. The untied head once: 2 * 64 * 257.
  const double flops = 2 * (40 * 2 * 49152.0 + 2 * 2 * 1600 * 64) + 2 * 64 * 257;
  EXPECT_NEAR(j.at("gflop_per_prefill").get<double>(), flops / 1e9, 1e-4);
  // Below the engine's threshold (16) the prompt runs token by token, and no FLOPs are claimed.
  r = run_orion(bench + "8");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("batched"), false);
  EXPECT_EQ(j.at("gflop_per_prefill").get<double>(), 0);
  EXPECT_EQ(j.at("peak_fraction").get<double>(), 0);
}

TEST_F(LlamaCli, TrainsAVocabularyAndUsesIt) {
  std::string corpus;
  for (int i = 0; i < 400; ++i)
    corpus += "In the beginning the model read line " + std::to_string(i) + " of a small corpus, and then another.\n";
  const std::string in = write("corpus.txt", corpus);
  CliResult r = run_orion("tokenizer train --vocab 300 --byte-fallback --in " + in + " --out " + path("tok"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = init("--layers 1 --dim 32 --heads 2 --context 64 --tokenizer " + path("tok"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("vocab 300 (sentencepiece)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(path("m/tokenizer.model")));
  EXPECT_FALSE(fs::exists(path("m/vocab.json")));
  const auto c = nlohmann::json::parse(read(path("m/config.json")));
  EXPECT_EQ(c.at("bos_token_id"), 1);
  EXPECT_EQ(c.at("eos_token_id"), 2);

  r = run_orion("tokenize -m " + path("m") + " In the beginning");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string ids = r.out.substr(0, r.out.find('\n'));
  r = run_orion("tokenize -m " + path("m") + " --decode " + ids);
  EXPECT_EQ(r.out, "In the beginning\n");
  r = run_orion("generate -m " + path("m") + " -p 'In the' -n 8 --seed 2");
  EXPECT_EQ(r.status, 0) << r.out;
  r = run_orion("perplexity -m " + path("m") + " -f " + in + " --window 64 --json");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(LlamaCli, ErrorsAreClear) {
  struct Case { std::string args, expect; int status; };
  for (const Case& k : std::vector<Case>{
           {"--heads 4 --kv-heads 3", "orion init: \"num_attention_heads\" (4) is not a multiple of \"num_key_value_heads\" (3)", 1},
           {"--preset stories110m", "--preset stories110m needs --tokenizer DIR", 1},
           {"--dim 30 --heads 2", "orion init: the head size 15 is odd", 1},
           {"--vocab 100", "--vocab 100 is smaller than the tokenizer's 257 tokens", 1},
           {"--sliding-window 64", "--sliding-window is a Gemma 3 option (--arch gemma3_text), not llama's", 1},
       }) {
    const CliResult r = init(k.args);
    EXPECT_EQ(r.status, k.status) << k.args << ": " << r.out;
    EXPECT_NE(r.out.find(k.expect), std::string::npos) << k.args << ": " << r.out;
  }
  CliResult r = run_orion("init --arch gpt2 --preset stories110m -o " + path("g"));
  EXPECT_NE(r.out.find("--preset stories110m is a llama model, not --arch gpt2"), std::string::npos) << r.out;

  ASSERT_EQ(init("--layers 1 --dim 32 --heads 2 --context 32").status, 0);
  r = run_orion("convert -m " + path("m") + " -o " + path("c") + " --dtype q8");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(path("m") + "/config.json: is a llama model: orion convert writes it as q4 (MLX's layout) only"),
            std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("c")));

  write("m/config.json", R"({"model_type": "falcon"})");
  r = run_orion("generate -m " + path("m") + " -p hi -n 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("m/config.json: model_type \"falcon\" is not supported"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
