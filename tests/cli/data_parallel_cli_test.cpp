// Data-parallel training over MPI (src/dist, Trainer::distribute), end to end: `mpirun -np N
// orion train` against one process with the same global batch. A step's micro-batches are the
// same at any N and only the order of the gradients' sum differs, so the losses and the final
// weights agree to f32 rounding, and two runs at the same N give the same bits (the sum is in
// rank order whatever MPI's algorithms). A checkpoint written at N = 2 resumes at N = 1 and 3.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_folder_test.h"
#include "cli/mpirun.h"
#include "cli/run_cli.h"
#include "model/formats/safetensors.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class DataParallelCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (scripts/setup.sh installs Open MPI)";
    std::string text;
    for (int i = 0; i < 300; ++i) text += "In the beginning was the word " + std::to_string(i % 37) + ", and the word was good.\n";
    write("corpus.txt", text);
    ASSERT_EQ(run_orion("init --out " + path("m") + " --layers 2 --dim 64 --heads 2 --context 64 --seed 3").status, 0);
    const CliResult r = run_orion("data prepare -m " + path("m") + " --in " + path("corpus.txt") + " --out " + path("tokens.bin"));
    ASSERT_EQ(r.status, 0) << r.out;
  }

  // `orion train` with a global batch of 6 sequences (3 x 2 micro-batches).
  std::string train_args(const std::string& out, int steps, const std::string& extra = "") const {
    return "train -m " + path("m") + " --data " + path("tokens.bin") + " --out " + path(out) + " --steps " + std::to_string(steps) +
           " --batch 2 --accum 6 --seq 32 --lr 3e-3 --warmup 5 --threads 1 --save-every 10 " + extra;
  }
  CliResult train(int ranks, const std::string& out, int steps, const std::string& extra = "") const {
    return ranks == 1 ? run_orion(train_args(out, steps, extra)) : run_orion_env(mpirun(ranks), train_args(out, steps, extra));
  }

  // mpirun started in the background, its output to OUT.log; the job's pid.
  pid_t start_job(int ranks, const std::string& out, const std::string& extra) const {
    const std::string cmd = "exec " + mpirun(ranks) + orion_bin() + " " + train_args(out, 100000, extra) + " >" +
                            path(out + ".log") + " 2>&1";
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }
  // The pid of rank `rank` of the job writing to `out`: the process whose environment says so.
  pid_t rank_pid(int rank, const std::string& out) const {
    for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string env = read(e.path() / "environ"), cmdline = read(e.path() / "cmdline");
      std::replace(env.begin(), env.end(), '\0', '\n');
      if (cmdline.find(path(out)) != std::string::npos && cmdline.find("mpirun") == std::string::npos &&
          (env.find("\nOMPI_COMM_WORLD_RANK=" + std::to_string(rank) + "\n") != std::string::npos))
        return std::stoi(name);
    }
    return 0;
  }
  // The job's exit status, or -1 when it has not ended within `seconds`.
  static int wait_for(pid_t pid, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  // A job of two ranks writing to `out`, its rank 1 sent `sig` once the first checkpoint is
  // written: the job's exit status (-1: still running 30 s later) and rank 1's pid.
  std::pair<int, pid_t> signal_rank_one(const std::string& out, const std::string& extra, int sig) const {
    const pid_t job = start_job(2, out, extra);
    wait_for_checkpoint(out);
    const pid_t victim = rank_pid(1, out);
    EXPECT_GT(victim, 0);
    if (victim > 0) {
      EXPECT_EQ(kill(victim, sig), 0);
    }
    return {wait_for(job, 30), victim};
  }
  void wait_for_checkpoint(const std::string& out) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(path(out + "/step-00000010/checkpoint.json")) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(fs::exists(path(out + "/step-00000010/checkpoint.json")));
  }

  std::vector<double> losses(const std::string& out) const {
    std::vector<double> l;
    std::ifstream f(path(out) + "/metrics.jsonl");
    for (std::string line; std::getline(f, line);)
      if (!line.empty()) l.push_back(json::parse(line)["loss"].get<double>());
    return l;
  }

  // The relative L2 difference of two checkpoints' weights, all of them as one vector.
  double weight_difference(const std::string& a, const std::string& b) const {
    const auto fa = model::SafetensorsFile::open(a + "/model.safetensors"), fb = model::SafetensorsFile::open(b + "/model.safetensors");
    double diff = 0, norm = 0;
    for (const model::SafetensorsEntry& e : fa.entries()) {
      const std::vector<float> x = fa.tensor(e.name).to_floats(), y = fb.tensor(e.name).to_floats();
      for (std::size_t i = 0; i < x.size(); ++i) {
        diff += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
        norm += static_cast<double>(y[i]) * y[i];
      }
    }
    return std::sqrt(diff / norm);
  }
};

TEST_F(DataParallelCli, TwoRanksTrainAsOneProcessWithTheSameGlobalBatchAndAgainBitForBit) {
  const CliResult one = train(1, "one", 50);
  ASSERT_EQ(one.status, 0) << one.out;
  const CliResult two = train(2, "two", 50);
  ASSERT_EQ(two.status, 0) << two.out;
  EXPECT_NE(two.out.find("data-parallel over MPI"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("each rank runs 3 of a step's 6 micro-batches"), std::string::npos) << two.out;
  const std::vector<double> a = losses("one"), b = losses("two");
  ASSERT_EQ(a.size(), 50u);
  ASSERT_EQ(b.size(), 50u);  // rank 0 alone writes the metrics
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * a[i]) << "step " << i + 1;
  EXPECT_LT(a.back(), a.front() - 1.0);
  EXPECT_LT(weight_difference(path("two/step-00000050"), path("one/step-00000050")), 1e-5);
  const json summary = json::parse(read(path("two/summary.json")));
  EXPECT_EQ(summary["ranks"], 2);
  EXPECT_GT(summary["reduced_bytes_per_step"].get<std::int64_t>(), 4 * 100000);

  const CliResult again = train(2, "again", 50);
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(read(path("again/step-00000050/model.safetensors")), read(path("two/step-00000050/model.safetensors")));
  EXPECT_EQ(losses("again"), b);
}

// On ane-sim (fp16 numerics, the kernels compiled by each rank), and a LoRA of a Qwen3-shaped
// folder on JSONL chat data (each rank tokenizes it): two ranks as one process. On the device a
// master weight that the sum's order moves by an f32 ulp can round to another fp16 value, which
// the loss shows at about 1.5e-5 of itself: ane-sim is held to 5e-5.
TEST_F(DataParallelCli, OnAneSimAndForALoraOnChatDataTwoRanksTrainAsOneProcess) {
  std::string log;
  ASSERT_EQ(make_hf_folder("qwen3", path("qwen3"), log), 0) << log;
  ASSERT_EQ(std::system(("python3 " + std::string(ORION_SOURCE_DIR) + "/scripts/make_chat_dataset.py " + path("chat") +
                         " --records 40 >/dev/null")
                            .c_str()),
            0);
  const std::string lora = "train -m " + path("qwen3") + " --data " + path("chat") +
                           " --lora 8 --mask-prompt --steps 4 --batch 2 --accum 4 --seq 64 --lr 1e-2 --threads 1 --out ";
  const std::string sim = "train -m " + path("m") + " --data " + path("tokens.bin") +
                          " --steps 5 --batch 2 --accum 4 --seq 32 --lr 3e-3 --warmup 3 --threads 1 --device ane-sim --out ";
  for (const std::string& args : {lora, sim}) {
    fs::remove_all(path("one"));
    fs::remove_all(path("two"));
    const CliResult one = run_orion(args + path("one")), two = run_orion_env(mpirun(2), args + path("two"));
    ASSERT_EQ(one.status, 0) << one.out;
    ASSERT_EQ(two.status, 0) << two.out;
    const std::vector<double> x = losses("one"), y = losses("two");
    ASSERT_EQ(x.size(), y.size());
    ASSERT_FALSE(x.empty());
    const double tolerance = args == sim ? 5e-5 : 1e-5;
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], tolerance * x[i]) << args << " step " << i + 1;
  }
}

// The run at two ranks, taken back to its step-20 checkpoint, resumed at one rank and at three.
TEST_F(DataParallelCli, ACheckpointWrittenAtTwoRanksResumesAtOneAndAtThree) {
  ASSERT_EQ(train(1, "whole", 30).status, 0);
  ASSERT_EQ(train(2, "two", 30).status, 0);
  for (const std::string run : {"one", "three"}) {
    fs::copy(path("two"), path(run), fs::copy_options::recursive);
    fs::remove_all(path(run + "/step-00000030"));
  }
  const CliResult r1 = train(1, "one", 30, "--resume");
  ASSERT_EQ(r1.status, 0) << r1.out;
  const CliResult r3 = train(3, "three", 30, "--resume");
  ASSERT_EQ(r3.status, 0) << r3.out;
  EXPECT_NE(r3.out.find("resumed from step 20"), std::string::npos) << r3.out;
  const std::vector<double> whole = losses("whole"), one = losses("one"), three = losses("three");
  ASSERT_EQ(one.size(), 30u);
  ASSERT_EQ(three.size(), 30u);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_NEAR(one[i], whole[i], 1e-5 * whole[i]) << "step " << i + 1;
    EXPECT_NEAR(three[i], whole[i], 1e-5 * whole[i]) << "step " << i + 1;
  }
}

// kill -9 of one rank: mpirun ends the job and names the rank; the last checkpoint is whole.
TEST_F(DataParallelCli, ARankKilledEndsTheJobNamingItAndTheLastCheckpointLoads) {
  const auto [status, victim] = signal_rank_one("run", "", SIGKILL);
  EXPECT_GT(status, 0) << read(path("run.log"));  // -1: not ended within 30 s
  const std::string log = read(path("run.log"));
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  std::vector<std::string> steps;
  for (const fs::directory_entry& e : fs::directory_iterator(path("run")))
    if (e.path().filename().string().starts_with("step-")) steps.push_back(e.path().string());
  ASSERT_FALSE(steps.empty());
  std::sort(steps.begin(), steps.end());
  const CliResult g = run_orion("generate -m " + steps.back() + " -p \"In the\" -n 4 --temp 0");
  EXPECT_EQ(g.status, 0) << g.out;
}

// A rank that hangs (stopped) leaves the others waiting in the sum: the timeout ends the job and
// says why.
TEST_F(DataParallelCli, ARankThatHangsIsCaughtByTheTimeout) {
  const auto [status, victim] = signal_rank_one("run", "--rank-timeout 3", SIGSTOP);
  if (victim > 0) kill(victim, SIGKILL);
  EXPECT_GT(status, 0);
  const std::string log = read(path("run.log"));
  EXPECT_NE(log.find("(rank 0 of 2): waited"), std::string::npos) << log;
  EXPECT_NE(log.find("a rank has hung"), std::string::npos) << log;
}

TEST_F(DataParallelCli, AnAccumulationTheRanksDoNotDivideIsRefused) {
  const CliResult r = train(4, "four", 2);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--accum 6 is not a multiple of the job's 4 ranks"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
