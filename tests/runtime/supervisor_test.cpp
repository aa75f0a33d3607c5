// The supervisor's restart, without leaving the test: the checkpoint before the exec, the
// arguments (with --resume once), and the errors when it cannot restart.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/error.h"
#include "runtime/supervisor.h"
#include "fake_exec.h"

namespace orion::runtime {
namespace {

TEST(Supervisor, AddsResumeOnce) {
  EXPECT_EQ(resume_arguments({"job", "a", "--b"}), (std::vector<std::string>{"job", "a", "--b", "--resume"}));
  EXPECT_EQ(resume_arguments({"job", "--resume", "a"}), (std::vector<std::string>{"job", "--resume", "a"}));
  EXPECT_FALSE(has_resume_flag({"--resume"}));  // argv[0] is the program, not a flag
}

using testing::Execed;
using testing::FakeExec;

class ReturningExec : public ProcessExec {
 public:
  void exec(const std::vector<std::string>&) override {}
};

TEST(Supervisor, CheckpointsThenExecsWithResume) {
  ::unsetenv("ORION_SUPERVISOR_RESTARTS");
  FakeExec exec;
  std::vector<std::string> events;
  Supervisor s({"job", "--steps", "9"}, [&] { events.push_back("checkpoint"); }, exec);
  EXPECT_FALSE(s.resumed());
  try {
    s.restart("over budget");
    FAIL() << "restart returned";
  } catch (const Execed& e) {
    events.push_back("exec");
    EXPECT_EQ(e.argv, (std::vector<std::string>{"job", "--steps", "9", "--resume"}));
  }
  EXPECT_EQ(events, (std::vector<std::string>{"checkpoint", "exec"}));
  EXPECT_STREQ(::getenv("ORION_SUPERVISOR_RESTARTS"), "0");  // this process was not replaced
}

TEST(Supervisor, AResumedProcessIsNotGivenASecondResume) {
  FakeExec exec;
  Supervisor s({"job", "--resume"}, [] {}, exec);
  EXPECT_TRUE(s.resumed());
  try {
    s.restart("over budget");
  } catch (const Execed& e) {
    EXPECT_EQ(e.argv, (std::vector<std::string>{"job", "--resume"}));
  }
}

TEST(Supervisor, AFailedCheckpointStopsTheRestart) {
  FakeExec exec;
  Supervisor s({"job"}, [] { throw Error("disk full"); }, exec);
  EXPECT_THROW(s.restart("over budget"), Error);
}

TEST(Supervisor, AnExecThatReturnsIsAnError) {
  ReturningExec exec;
  Supervisor s({"job"}, [] {}, exec);
  EXPECT_THROW(s.restart("over budget"), Error);
}

TEST(Supervisor, StopsAChainThatMakesNoProgress) {
  ::setenv("ORION_SUPERVISOR_RESTARTS", "3", 1);
  FakeExec exec;
  int checkpoints = 0;
  Supervisor s({"job", "--resume"}, [&] { ++checkpoints; }, exec, {.max_restarts = 3});
  EXPECT_EQ(s.restarts(), 3);
  try {
    s.restart("over budget");
    FAIL() << "restart returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("restarted 3 times"), std::string::npos) << e.what();
  }
  EXPECT_EQ(checkpoints, 0);
  ::unsetenv("ORION_SUPERVISOR_RESTARTS");
}

}  // namespace
}  // namespace orion::runtime
