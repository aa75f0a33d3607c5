// Pipeline-parallel inference over MPI (engine/pipeline.h), end to end: `mpirun -np N orion
// generate --pipeline` and `orion serve --pipeline` against one process. Every stage runs the
// fast engine's kernels in one process's order, so greedy decoding gives the same tokens (the
// unit test, tests/engine/pipeline_test.cpp, holds the logits to the same bits).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/mpirun.h"
#include "cli/run_cli.h"
#include "cli/serve_process.h"

namespace orion::test {
namespace {

using nlohmann::json;

class PipelineCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (scripts/setup.sh installs Open MPI)";
  }
  // What `launcher orion ARGS` prints on stdout (every rank's stderr dropped).
  static std::string stdout_of(const std::string& launcher, const std::string& args) {
    const CliResult r = run_command(launcher + orion_bin() + " " + args + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << launcher << args << "\n" << r.out;
    return r.out;
  }
};

TEST_F(PipelineCli, GenerateOverTwoAndThreeRanksGivesOneProcesssTokens) {
  const CliResult init = run_orion("init --arch qwen3 -o " + path("q3") +
                                   " --layers 3 --dim 64 --heads 4 --kv-heads 2 --head-dim 16 --hidden 160 --context 96 --vocab 300 --seed 5");
  ASSERT_EQ(init.status, 0) << init.out;
  // A prompt long enough for the BLAS path of the prefill, then decode steps.
  const std::string args = "generate -m " + path("q3") +
                           " -p 'the quick brown fox jumps over the lazy dog and runs far away' -n 24 --temp 0 --threads 1";
  const std::string one = stdout_of("", args);
  ASSERT_GT(one.size(), 60u);
  EXPECT_EQ(stdout_of(mpirun(2), args + " --pipeline"), one);
  EXPECT_EQ(stdout_of(mpirun(3), args + " --pipeline"), one);
  // Each rank says what it held; rank 2 alone the head.
  const CliResult three = run_orion_env(mpirun(3), args + " --pipeline");
  ASSERT_EQ(three.status, 0) << three.out;
  EXPECT_NE(three.out.find("rank 0 holds layers 0-0, the embedding"), std::string::npos) << three.out;
  EXPECT_NE(three.out.find("pipeline: rank 2 held layers 2-2, the final norm and the head; resident"), std::string::npos)
      << three.out;
  // More ranks than layers, and an engine a pipeline does not run: clear errors, and the job ends.
  const CliResult four = run_orion_env(mpirun(4), args + " --pipeline");
  EXPECT_NE(four.status, 0);
  EXPECT_NE(four.out.find("4 ranks for a model of 3 layers"), std::string::npos) << four.out;
  const CliResult graph = run_orion_env(mpirun(2), args + " --pipeline --engine graph");
  EXPECT_NE(graph.status, 0);
  EXPECT_NE(graph.out.find("--pipeline runs the fast CPU engine"), std::string::npos) << graph.out;
}

TEST_F(PipelineCli, ServeOverTwoRanksAnswersAsOneProcess) {
  std::string log;
  ASSERT_EQ(make_hf_folder("qwen3", path("m"), log), 0) << log;
  const std::string rendered = stdout_of("", "generate -m " + path("m") + " -p 'Name a colour' --chat -n 10 --temp 0 --threads 1");
  const std::string marker = "<|im_start|>assistant\n";
  const std::size_t at = rendered.rfind(marker);
  ASSERT_NE(at, std::string::npos) << rendered;
  std::string want = rendered.substr(at + marker.size());
  if (!want.empty() && want.back() == '\n') want.pop_back();

  ServeProcess server(path("m"), "--pipeline --threads 1 --quiet", mpirun(2));
  ASSERT_GT(server.port(), 0) << server.log();
  // Two requests one after the other: the second's sessions on both ranks start afresh.
  for (int i = 0; i < 2; ++i) {
    const Http chat = curl("-H 'Content-Type: application/json' -d '{\"messages\": [{\"role\": \"user\", \"content\": "
                           "\"Name a colour\"}], \"max_tokens\": 10, \"temperature\": 0}' " +
                           server.url() + "/v1/chat/completions");
    ASSERT_EQ(chat.status, 200) << chat.body << server.log();
    const json j = json::parse(chat.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << chat.body;
    EXPECT_EQ(j["choices"][0]["message"]["content"], want) << chat.body;
  }
}

}  // namespace
}  // namespace orion::test
