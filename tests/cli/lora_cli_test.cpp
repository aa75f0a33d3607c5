// LoRA end to end, for GPT-2 and a grouped-query Llama: `train --lora` on the cpu (in the ANE's
// fp16 numerics) and on ane-sim (the base baked into the kernels once, the adapter's matrices
// their inputs) with the same loss curve and the base model's file untouched; adapter folders in
// PEFT's layout; `generate --lora` on ane-sim giving each adapter's cpu text, the second adapter
// compiling nothing; `merge-lora` giving the adapted model's numbers; and the errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_folder_test.h"
#include "run_cli.h"
#include "cli/shared_fixture.h"
#include "test_scale.h"

namespace orion::test {
namespace {

struct LoraCase {
  std::string name, init;
};

void PrintTo(const LoraCase& c, std::ostream* os) { *os << c.name; }

// The adapters' training runs: at the small scale half as long, still far enough for each
// adapter to learn its text (the loss falls by more than 1 in the first 20 steps).
int lora_steps() { return testing_util::at_scale(40, 20); }

// A checkpoint folder of the adapters' runs, "step-00000040".
std::string lora_step_dir(int step) {
  const std::string n = std::to_string(step);
  return "step-" + std::string(8 - n.size(), '0') + n;
}

class LoraCli : public CliFolderTest, public ::testing::WithParamInterface<LoraCase> {
 protected:
  // A base model that has learnt one text (a random one's logits are too flat for greedy text to
  // be the same in fp16 and f32), and two other texts for adapters to learn.
  void SetUp() override {
    CliFolderTest::SetUp();
    const auto corpus = [&](const std::string& name, const std::string& sentence) {
      std::string text;
      for (int i = 0; i < 300; ++i) text += sentence + std::to_string(i % 7) + ".\n";
      write(name + ".txt", text);
    };
    corpus("base", "In the beginning was the word, and the word was good ");
    corpus("cat", "In the beginning there was a cat that sat on the mat ");
    corpus("dog", "In the beginning the dog ran to the park and back home ");
    // What perplexity scores: ten rounds of the cat text's seven lines, all it has to tell.
    std::string scored;
    for (int i = 0; i < 70; ++i) scored += "In the beginning there was a cat that sat on the mat " + std::to_string(i % 7) + ".\n";
    write("cat_scored.txt", scored);
    // The base model, trained once for all the tests of its architecture (shared_fixture.h).
    std::string log;
    const auto make_base = [&](const std::string& dir, std::string& out) {
      CliResult r = run_orion("init --out " + dir + "/m0 " + GetParam().init);
      if (r.status == 0) r = run_orion("data prepare -m " + dir + "/m0 --in " + path("base.txt") + " --out " + dir + "/base.bin");
      if (r.status == 0)
        r = run_orion("train -m " + dir + "/m0 --data " + dir + "/base.bin --out " + dir + "/pre --steps 80 --batch 2 --seq 32 --lr 3e-3 --threads 2");
      out = r.out;
      if (r.status != 0) return false;
      std::filesystem::rename(dir + "/pre/step-00000080", dir + "/m");
      return true;
    };
    ASSERT_TRUE(copy_shared_fixture("lora-base-" + GetParam().name, make_base, "m", path("m"), log)) << log;
    for (const char* c : {"cat", "dog"}) {
      const CliResult p = run("data prepare -m " + path("m") + " --in " + path(std::string(c) + ".txt") + " --out " +
                              path(std::string(c) + ".bin"));
      ASSERT_EQ(p.status, 0) << p.out;
    }
  }
  // With the package cache inside the test's folder, so that compiles are counted afresh.
  CliResult run(const std::string& args) const { return run_orion_env("ORION_CACHE_DIR=" + path("cache") + " ", args); }
  CliResult train(const std::string& out, const std::string& extra, const std::string& data = "cat") const {
    return run("train -m " + path("m") + " --data " + path(data + ".bin") + " --out " + path(out) + " --steps " +
               std::to_string(lora_steps()) + " --batch 2 --seq 32 --threads 2 " + extra);
  }
  std::vector<double> losses(const std::string& out) const {
    std::vector<double> l;
    std::istringstream in(read(dir_ / out / "metrics.jsonl"));
    for (std::string line; std::getline(in, line);) l.push_back(nlohmann::json::parse(line).at("loss").get<double>());
    return l;
  }
  // The generated text (stdout's first line; the reports go to stderr, after it).
  std::string generate(const std::string& extra) const {
    const CliResult r = run("generate -m " + path("m") + " -p 'In the beginning' -n 16 --threads 2 " + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    return r.out;
  }
};

// The generated text: the line that starts with the prompt (the reports on stderr are mixed in).
std::string text_of(const std::string& out) {
  const std::size_t at = out.find("In the beginning");
  return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
}

TEST_P(LoraCli, TrainsTheSameCurveOnCpuAndAneSimAndLeavesTheBaseAlone) {
  const std::string base = read(dir_ / "m" / "model.safetensors");
  const CliResult cpu = train("cpu", "--lora 8 --lr 1e-2 --precision f16");
  ASSERT_EQ(cpu.status, 0) << cpu.out;
  const CliResult sim = train("sim", "--lora 8 --lr 1e-2 --device ane-sim");
  ASSERT_EQ(sim.status, 0) << sim.out;
  EXPECT_NE(sim.out.find("adapter: "), std::string::npos) << sim.out;
  const std::vector<double> a = losses("cpu"), b = losses("sim");
  ASSERT_EQ(a.size(), static_cast<std::size_t>(lora_steps()));
  ASSERT_EQ(b.size(), static_cast<std::size_t>(lora_steps()));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 0.02 + 0.02 * a[i]) << "step " << i + 1;
  EXPECT_LT(a.back(), a.front() - 0.5);
  // The base model's file, bit for bit; the checkpoint an adapter folder in PEFT's layout.
  EXPECT_EQ(read(dir_ / "m" / "model.safetensors"), base);
  for (const char* run_dir : {"cpu", "sim"}) {
    const auto step = dir_ / run_dir / lora_step_dir(lora_steps());
    EXPECT_TRUE(std::filesystem::exists(step / "adapter_model.safetensors"));
    EXPECT_FALSE(std::filesystem::exists(step / "model.safetensors"));
    const auto config = nlohmann::json::parse(read(step / "adapter_config.json"));
    EXPECT_EQ(config.at("peft_type"), "LORA");
    EXPECT_EQ(config.at("r"), 8);
  }
  // On ane-sim: one compile per kernel, nothing reloaded, the adapter written each step.
  const auto summary = nlohmann::json::parse(read(dir_ / "sim" / "summary.json"));
  EXPECT_EQ(summary.at("compiles"), summary.at("kernels"));
  EXPECT_EQ(summary.at("reloads"), 0);
  EXPECT_EQ(summary.at("restarts"), 0);
  EXPECT_GT(summary.at("per_step").at("weight_bytes").get<double>(), 0);
  EXPECT_EQ(summary.at("lora").at("rank"), 8);
  // The cost model's projection of the step's kernels, per chip: a faster chip takes less.
  const auto& projected = summary.at("projection").at("device_ms_per_step");
  EXPECT_GT(projected.at("m1").get<double>(), projected.at("m4-max").get<double>()) << projected.dump();
  EXPECT_GT(projected.at("m4-max").get<double>(), 0) << projected.dump();
}

TEST_P(LoraCli, GeneratesEachAdaptersCpuTextOnAneSimAndTheSecondCompilesNothing) {
  ASSERT_EQ(train("one", "--lora 4 --lora-alpha 16 --lr 1e-2").status, 0);
  ASSERT_EQ(train("two", "--lora 4 --lora-alpha 16 --lr 1e-2", "dog").status, 0);
  const std::string one = path("one/" + lora_step_dir(lora_steps())), two = path("two/" + lora_step_dir(lora_steps()));
  const std::string cpu_one = text_of(generate("--lora " + one)), cpu_two = text_of(generate("--lora " + two));
  EXPECT_NE(cpu_one, text_of(generate(""))) << "the adapter changes nothing";
  EXPECT_NE(cpu_one, cpu_two) << "the adapters learnt the same";
  const std::string sim_one = generate("--device ane-sim --lora " + one);
  const std::string sim_two = generate("--device ane-sim --lora " + two);
  EXPECT_EQ(text_of(sim_one), cpu_one);
  EXPECT_EQ(text_of(sim_two), cpu_two);
  EXPECT_NE(sim_one.find("package cache miss"), std::string::npos) << sim_one;
  EXPECT_NE(sim_two.find("package cache hit"), std::string::npos) << sim_two;
  EXPECT_NE(sim_two.find("ane-sim: 0 compiles"), std::string::npos) << sim_two;
}

TEST_P(LoraCli, MergedFolderScoresAsTheBaseWithTheAdapter) {
  ASSERT_EQ(train("run", "--lora 8 --lr 1e-2").status, 0);
  const std::string adapter = path("run/" + lora_step_dir(lora_steps()));
  const CliResult merged = run("merge-lora -m " + path("m") + " --lora " + adapter + " -o " + path("merged"));
  ASSERT_EQ(merged.status, 0) << merged.out;
  const auto score = [&](const std::string& args) {
    const CliResult r = run("perplexity --json --window 32 -f " + path("cat_scored.txt") + " " + args);
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out.substr(r.out.find('{'))).at("loss").get<double>();
  };
  const double with_adapter = score("-m " + path("m") + " --lora " + adapter);
  EXPECT_NEAR(score("-m " + path("merged")), with_adapter, 1e-5);
  EXPECT_LT(with_adapter, score("-m " + path("m")) - 0.5);
  // Not over its own input, and not over an existing folder without --force.
  EXPECT_EQ(run("merge-lora -m " + path("m") + " --lora " + adapter + " -o " + path("m")).status, 1);
  EXPECT_EQ(run("merge-lora -m " + path("m") + " --lora " + adapter + " -o " + path("merged")).status, 1);
}

// As for full training: a run that stopped after its checkpoint half way and is resumed ends
// with the same adapter, bit for bit, as the run that never stopped.
TEST_P(LoraCli, AResumedRunEndsWithTheSameAdapter) {
  const int steps = lora_steps(), every = steps / 4;
  const std::string saves = "--lora 8 --lr 1e-2 --save-every " + std::to_string(every) + " --keep 5";
  ASSERT_EQ(train("whole", saves).status, 0);
  std::filesystem::copy(dir_ / "whole", dir_ / "parts", std::filesystem::copy_options::recursive);
  for (const int later : {3 * every, steps}) std::filesystem::remove_all(dir_ / "parts" / lora_step_dir(later));
  const CliResult resumed = train("parts", saves + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resumed from step " + std::to_string(steps / 2)), std::string::npos) << resumed.out;
  EXPECT_EQ(read(dir_ / "parts" / lora_step_dir(steps) / "adapter_model.safetensors"),
            read(dir_ / "whole" / lora_step_dir(steps) / "adapter_model.safetensors"));
}

TEST_P(LoraCli, BadAdaptersAndMismatchedResumesGetOneClearError) {
  ASSERT_EQ(train("run", "--lora 4 --save-every " + std::to_string(lora_steps() / 2)).status, 0);
  const auto trained_for = [&](int steps, const std::string& extra) {
    return run("train -m " + path("m") + " --data " + path("cat.bin") + " --out " + path("run") + " --steps " +
               std::to_string(steps) + " --batch 2 --seq 32 --threads 2 " + extra);
  };
  const std::string adapter = path("run/" + lora_step_dir(lora_steps()));
  // Resumed with other LoRA options, or without LoRA.
  CliResult r = trained_for(lora_steps() + 20, "--lora 8 --resume");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("resume with the same --lora options"), std::string::npos) << r.out;
  r = trained_for(lora_steps() + 20, "--resume");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("no LoRA"), std::string::npos) << r.out;
  // A rank the tensors do not have.
  std::filesystem::copy(adapter, path("bad_rank"));
  auto config = nlohmann::json::parse(read(dir_ / "bad_rank" / "adapter_config.json"));
  config["r"] = 8;
  write("bad_rank/adapter_config.json", config.dump());
  r = run("generate -m " + path("m") + " -n 2 --lora " + path("bad_rank"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("adapter_model.safetensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 8"), std::string::npos) << r.out;
  // Targets the model does not have.
  std::filesystem::copy(adapter, path("bad_targets"));
  config = nlohmann::json::parse(read(dir_ / "bad_targets" / "adapter_config.json"));
  config["target_modules"] = {"w_nonexistent"};
  write("bad_targets/adapter_config.json", config.dump());
  r = run("generate -m " + path("m") + " -n 2 --lora " + path("bad_targets"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("w_nonexistent"), std::string::npos) << r.out;
  // A missing file.
  std::filesystem::copy(adapter, path("no_weights"));
  std::filesystem::remove(dir_ / "no_weights" / "adapter_model.safetensors");
  r = run("generate -m " + path("m") + " -n 2 --lora " + path("no_weights"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("adapter_model.safetensors: missing"), std::string::npos) << r.out;
  // Targets that are not a linear layer of the architecture.
  r = train("other", GetParam().name == "Gpt2" ? "--lora 4 --lora-targets gate" : "--lora 4 --lora-targets c_fc");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("is not a linear layer"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Archs, LoraCli,
                         ::testing::Values(LoraCase{"Gpt2", "--layers 2 --dim 64 --heads 4 --context 128"},
                                           LoraCase{"LlamaGqa", "--arch llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --context 128"},
                                           LoraCase{"Gemma3", "--arch gemma3_text --layers 2 --dim 64 --heads 4 --kv-heads 2 "
                                                              "--head-dim 16 --context 128 --sliding-window 8 --global-every 2 --rope-theta 1000000"}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace orion::test
