// orion train end to end, for each architecture: a model from `orion init` (GPT-2 with the
// byte-level vocabulary; Llama with grouped-query attention and a SentencePiece vocabulary from
// `orion tokenizer train`), a token file from `orion data prepare`, a run whose loss falls and
// whose checkpoint `orion generate` loads, and runs killed with SIGKILL at random moments and
// resumed, which must end bit-identical to a run that was never interrupted.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

#include "cli_folder_test.h"
#include "run_cli.h"
#include "test_scale.h"

extern char** environ;

namespace orion::test {
namespace {

struct TrainCase {
  std::string name;
  std::string init;  // `orion init` arguments
  bool sentencepiece = false;  // a vocabulary from `orion tokenizer train` (tokenizer.model)
  std::string model_type;      // config.json's
};

void PrintTo(const TrainCase& c, std::ostream* os) { *os << c.name; }

class TrainCli : public CliFolderTest, public ::testing::WithParamInterface<TrainCase> {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    std::string text;
    for (int i = 0; i < 400; ++i) text += "In the beginning was the word " + std::to_string(i % 37) + ", and the word was good.\n";
    write("corpus.txt", text);
    std::string init = "init --out " + path("m") + " " + GetParam().init;
    if (GetParam().sentencepiece) {
      const CliResult t = run_orion("tokenizer train --vocab 300 --byte-fallback --in " + path("corpus.txt") + " --out " + path("tok"));
      ASSERT_EQ(t.status, 0) << t.out;
      init += " --tokenizer " + path("tok");
    }
    const CliResult i = run_orion(init);
    ASSERT_EQ(i.status, 0) << i.out;
    const CliResult r = run_orion("data prepare -m " + path("m") + " --in " + path("corpus.txt") + " --out " + path("tokens.bin"));
    ASSERT_EQ(r.status, 0) << r.out;
  }

  std::string train_args(const std::string& out, int steps, int seq = 32, int save_every = 1) const {
    return "train -m " + path("m") + " --data " + path("tokens.bin") + " --out " + path(out) + " --steps " +
           std::to_string(steps) + " --batch 2 --seq " + std::to_string(seq) + " --lr 3e-3 --warmup 5 --threads 2 --save-every " +
           std::to_string(save_every) + " --keep 2 --eval-every 20";
  }

  // Starts `orion ARGS` and returns its pid (stdout and stderr to /dev/null).
  static pid_t spawn_orion(const std::string& args) {
    const char* bin = std::getenv("ORION_BIN");
    const std::string cmd =
        "exec " + std::string(bin ? bin : ORION_BIN_PATH) + " " + args + " >/dev/null 2>&1";
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
    return pid;
  }
};

TEST_P(TrainCli, TrainsAndTheCheckpointIsAModelFolder) {
  const CliResult r = run_orion(train_args("run", 20));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trained 20 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("val"), std::string::npos) << r.out;
  // The corpus repeats one sentence: 20 steps learn much of it.
  double first = 0, last = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find(": loss "), ": loss %lf -> %lf", &first, &last), 2) << r.out;
  EXPECT_LT(last, first - 1.0) << r.out;
  const std::string step = path("run/step-00000020");
  EXPECT_EQ(nlohmann::json::parse(read(step + "/config.json")).at("model_type"), GetParam().model_type);
  EXPECT_EQ(std::filesystem::exists(step + "/tokenizer.model"), GetParam().sentencepiece);
  const CliResult g = run_orion("generate -m " + step + " -p \"In the\" -n 8 --seed 1");
  EXPECT_EQ(g.status, 0) << g.out;
  // A complete run resumed does nothing; without --resume the folder is refused.
  const CliResult again = run_orion(train_args("run", 20) + " --resume");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;
  const CliResult refused = run_orion(train_args("run", 20));
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.out.find("--resume"), std::string::npos) << refused.out;
}

// --init trains the model `orion init` makes from the same options, with --seed as the weights'
// seed: the run ends bit-identical to init + train -m, and OUT/init is that initial model.
TEST_P(TrainCli, InitTrainsTheModelOrionInitMakes) {
  std::string arch = GetParam().init;
  arch = arch.substr(0, arch.find(" --seed "));  // every case's init arguments end with --seed 3
  if (GetParam().sentencepiece) arch += " --tokenizer " + path("tok");
  const std::string common = " --data " + path("tokens.bin") + " --steps 4 --batch 2 --seq 32 --threads 2 --seed 3";
  const CliResult ref = run_orion("train -m " + path("m") + common + " --out " + path("ref"));
  ASSERT_EQ(ref.status, 0) << ref.out;
  const CliResult scratch = run_orion("train --init " + arch + common + " --out " + path("scratch"));
  ASSERT_EQ(scratch.status, 0) << scratch.out;
  EXPECT_TRUE(read(path("m/model.safetensors")) == read(path("scratch/init/model.safetensors")));
  EXPECT_TRUE(read(path("ref/step-00000004/model.safetensors")) == read(path("scratch/step-00000004/model.safetensors")));
  // Resumed, the complete run does nothing (and leaves OUT/init as it was).
  const CliResult again = run_orion("train --init " + arch + common + " --out " + path("scratch") + " --resume");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;
  // One of -m and --init.
  const CliResult both = run_orion("train --init -m " + path("m") + common + " --out " + path("both"));
  EXPECT_EQ(both.status, 1);
  EXPECT_NE(both.out.find("not both"), std::string::npos) << both.out;
  const CliResult neither = run_orion("train" + common + " --out " + path("neither"));
  EXPECT_EQ(neither.status, 1);
  EXPECT_NE(neither.out.find("--init"), std::string::npos) << neither.out;
}

TEST_P(TrainCli, RunsKilledAtRandomMomentsAndResumedEndBitIdentical) {
  // At the small scale every step is dearer (sanitizers, qemu): fewer still give the kills time.
  const int kSteps = testing_util::at_scale(60, 30);
  // The reference saves only at its end: a run neither interrupted nor checkpointed on the way.
  const CliResult ref = run_orion(train_args("ref", kSteps, 32, kSteps));
  ASSERT_EQ(ref.status, 0) << ref.out;

  std::mt19937 rng(20261130);
  int interrupted = 0;
  for (int attempt = 0; attempt < 40 && interrupted < 5; ++attempt) {
    const pid_t pid = spawn_orion(train_args("run", kSteps) + " --resume");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(40, 400)(rng)));
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {  // still running: kill it mid-step or mid-save
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++interrupted;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      break;  // finished before the kill
    }
  }
  EXPECT_GE(interrupted, 3) << "the runs ended before they could be killed: make them longer";
  const CliResult last = run_orion(train_args("run", kSteps) + " --resume");
  ASSERT_EQ(last.status, 0) << last.out;

  const std::string step = "/step-000000" + std::to_string(kSteps);
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_TRUE(read(path("ref") + step + "/" + f) == read(path("run") + step + "/" + f)) << f << " differs";
  // The metrics of the resumed run have each step once, in order, as the uninterrupted run's.
  std::istringstream lines(read(path("run") + "/metrics.jsonl"));
  std::string line;
  int expect = 1;
  while (std::getline(lines, line)) {
    ASSERT_NE(line.find("\"step\":" + std::to_string(expect) + ","), std::string::npos) << line;
    ++expect;
  }
  EXPECT_EQ(expect, kSteps + 1);
}

// With --ane-weights baked, the forward and backward kernels on ane-sim take each step's weights
// by a reload. With a device that keeps the compiled weights instead (--ane-stale-reload) every step recompiles,
// and a budget of a few compiles per process (faithful: past it the device would return
// garbage) makes the supervisor checkpoint and exec the command again with --resume, step
// after step: the chain of processes must end where the run without restarts ends, bit for bit.
TEST_P(TrainCli, OnAneSimASpentCompileBudgetRestartsTheProcessAndTheRunEndsBitIdentical) {
  constexpr int kSteps = 8;
  const std::string ane = " --device ane-sim --ane-weights baked";
  const CliResult ref = run_orion(train_args("ref", kSteps, 32, 100) + ane);
  ASSERT_EQ(ref.status, 0) << ref.out;
  EXPECT_EQ(ref.out.find("resumed"), std::string::npos) << ref.out;
  std::smatch counts;
  ASSERT_TRUE(std::regex_search(ref.out, counts, std::regex(R"((\d+) compiles, (\d+) reloads)"))) << ref.out;
  EXPECT_EQ(std::stoi(counts[2]), std::stoi(counts[1]) * (kSteps - 1)) << "ane-sim reloads each later step's weights";
  const CliResult run =
      run_orion(train_args("run", kSteps, 32, 100) + ane + " --ane-faithful --ane-stale-reload --ane-compile-budget 6");
  ASSERT_EQ(run.status, 0) << run.out;
  int restarts = 0;
  for (std::size_t at = run.out.find("resumed from step"); at != std::string::npos; at = run.out.find("resumed from step", at + 1))
    ++restarts;
  EXPECT_GE(restarts, 3) << run.out;
  const std::string step = "/step-0000000" + std::to_string(kSteps);
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_TRUE(read(path("ref") + step + "/" + f) == read(path("run") + step + "/" + f)) << f << " differs";

  // The device computes in fp16, on windows of a multiple of 32 tokens.
  const CliResult f32 = run_orion(train_args("f32", 2) + ane + " --precision f32");
  EXPECT_EQ(f32.status, 1);
  EXPECT_NE(f32.out.find("fp16"), std::string::npos) << f32.out;
  const CliResult short_seq = run_orion(train_args("short", 2, 16) + ane);
  EXPECT_EQ(short_seq.status, 1);
  EXPECT_NE(short_seq.out.find("multiple of 32"), std::string::npos) << short_seq.out;
  // The emulator's settings on another device would be silently ignored: refused.
  const CliResult cpu = run_orion(train_args("cpu", 2) + " --ane-compile-budget 6");
  EXPECT_EQ(cpu.status, 1);
  EXPECT_NE(cpu.out.find("--device ane-sim"), std::string::npos) << cpu.out;
}

// Weights as inputs, the default: each kernel compiles once and every step writes its weights
// into the kernels' surfaces, so a device that would give garbage after a reload and fail past
// one compile per kernel (plus one spare) trains without a restart, to the same bits.
TEST_P(TrainCli, OnAneSimWeightsAsInputsCompileOnceAndNeverReloadOrRestart) {
  const int kSteps = testing_util::at_scale(6, 3);
  const CliResult ref = run_orion(train_args("inputs", kSteps, 32, 100) + " --device ane-sim");
  ASSERT_EQ(ref.status, 0) << ref.out;
  std::smatch counts;
  // Kernels alike but for names share a program: the compiles are the programs.
  const std::regex counted(
      R"((\d+) kernels \((\d+) programs\) and \d+ host segments, (\d+) compiles, (\d+) reloads, (\d+) restarts)");
  ASSERT_TRUE(std::regex_search(ref.out, counts, counted)) << ref.out;
  const int kernels = std::stoi(counts[1]), programs = std::stoi(counts[2]);
  EXPECT_LE(programs, kernels);
  EXPECT_EQ(std::stoi(counts[3]), programs);
  EXPECT_EQ(std::stoi(counts[4]), 0);
  EXPECT_EQ(std::stoi(counts[5]), 0);
  EXPECT_NE(ref.out.find("weights inputs"), std::string::npos) << ref.out;
  const CliResult tight = run_orion(train_args("tight", kSteps, 32, 100) +
                                    " --device ane-sim --ane-faithful --ane-stale-reload --ane-compile-budget " +
                                    std::to_string(programs + 1));
  ASSERT_EQ(tight.status, 0) << tight.out;
  EXPECT_EQ(tight.out.find("resumed"), std::string::npos) << tight.out;
  ASSERT_TRUE(std::regex_search(tight.out, counts, counted)) << tight.out;
  EXPECT_EQ(std::stoi(counts[3]), programs);
  EXPECT_EQ(std::stoi(counts[4]), 0);
  EXPECT_EQ(std::stoi(counts[5]), 0);
  const std::string step = "/step-0000000" + std::to_string(kSteps);
  EXPECT_TRUE(read(path("inputs") + step + "/model.safetensors") == read(path("tight") + step + "/model.safetensors"));
  // The machine-readable summary says the same.
  const std::string summary = read(path("tight") + "/summary.json");
  for (const std::string& field : {std::string(R"("device": "ane-sim")"), "\"steps\": " + std::to_string(kSteps),
                                   "\"kernels\": " + std::to_string(kernels), "\"programs\": " + std::to_string(programs),
                                   "\"compiles\": " + std::to_string(programs),
                                   std::string(R"("reloads": 0)"), std::string(R"("restarts": 0)"),
                                   std::string(R"("ms_per_step": )"), std::string(R"("final_loss": )"),
                                   std::string(R"("final_val_loss": )"), std::string(R"("weight_bytes": )")})
    EXPECT_NE(summary.find(field), std::string::npos) << field << " in " << summary;
}

INSTANTIATE_TEST_SUITE_P(
    Archs, TrainCli,
    ::testing::Values(TrainCase{"Gpt2", "--layers 2 --dim 64 --heads 2 --context 64 --seed 3", false, "gpt2"},
                      TrainCase{"LlamaGqaSentencePiece", "--arch llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --context 64 --seed 3",
                                true, "llama"}),
    [](const ::testing::TestParamInfo<TrainCase>& p) { return p.param.name; });

}  // namespace
}  // namespace orion::test
