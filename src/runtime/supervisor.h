#pragma once
// The exec-restart supervisor: when a job needs more compiles than the process has left and
// weights cannot be reloaded, the only way to a fresh budget is a fresh process (ANE030).
// The supervisor has the job write a checkpoint, then replaces the process with the same
// program and arguments plus `--resume`; the new process reads the checkpoint and continues.
// The exec sits behind ProcessExec so that tests can check the decision and the arguments
// without leaving the test.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace orion::runtime {

constexpr std::string_view kResumeFlag = "--resume";

// Replaces the running program. Returns only when it could not.
class ProcessExec {
 public:
  virtual ~ProcessExec() = default;
  virtual void exec(const std::vector<std::string>& argv) = 0;
};

// execv of this very executable (/proc/self/exe on Linux, argv[0] through PATH elsewhere).
// Standard streams are flushed first, so that nothing the job printed is lost.
class PosixExec : public ProcessExec {
 public:
  void exec(const std::vector<std::string>& argv) override;
};

bool has_resume_flag(const std::vector<std::string>& argv);
// `argv` with `--resume` appended, unless it is there already.
std::vector<std::string> resume_arguments(std::vector<std::string> argv);
std::vector<std::string> arguments(int argc, const char* const* argv);

struct SupervisorOptions {
  // Restarts allowed in a chain of processes (counted through the environment), so that a job
  // that cannot make progress in a fresh process fails instead of exec'ing forever.
  int max_restarts = 1000;
};

class Supervisor {
 public:
  // `checkpoint` writes the job's state (atomically: core/atomic_file.h) so that the process
  // started with --resume continues from it. `exec` must outlive the supervisor.
  Supervisor(std::vector<std::string> argv, std::function<void()> checkpoint, ProcessExec& exec,
             SupervisorOptions options = {});

  bool resumed() const { return has_resume_flag(argv_); }
  // Restarts before this process in its chain (0 in the first process).
  int restarts() const { return restarts_; }

  // Checkpoints and execs; `reason` goes into the error thrown if either fails (a checkpoint
  // that throws stops the restart: the process keeps running and the error propagates).
  [[noreturn]] void restart(std::string_view reason);

 private:
  std::vector<std::string> argv_;
  std::function<void()> checkpoint_;
  ProcessExec& exec_;
  SupervisorOptions options_;
  int restarts_ = 0;
};

}  // namespace orion::runtime
