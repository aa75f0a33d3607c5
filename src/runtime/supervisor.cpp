#include "runtime/supervisor.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "core/error.h"

namespace orion::runtime {

namespace {

// The count of restarts travels with the process through its environment: it survives exec,
// and needs no file.
constexpr const char* kRestartsVar = "ORION_SUPERVISOR_RESTARTS";

int restarts_from_environment() {
  const char* v = std::getenv(kRestartsVar);
  if (!v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 0) throw Error(std::string(kRestartsVar) + " is not a count: '" + v + "'");
  return static_cast<int>(n);
}

}  // namespace

void PosixExec::exec(const std::vector<std::string>& argv) {
  if (argv.empty()) throw Error("supervisor: exec with no arguments");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
#if defined(__linux__)
  ::execv("/proc/self/exe", args.data());
#else
  ::execvp(args[0], args.data());
#endif
  throw Error::from_errno(argv[0], "supervisor: exec failed", errno);
}

bool has_resume_flag(const std::vector<std::string>& argv) {
  return std::find(argv.begin() + (argv.empty() ? 0 : 1), argv.end(), kResumeFlag) != argv.end();
}

std::vector<std::string> resume_arguments(std::vector<std::string> argv) {
  if (!has_resume_flag(argv)) argv.emplace_back(kResumeFlag);
  return argv;
}

std::vector<std::string> arguments(int argc, const char* const* argv) { return {argv, argv + argc}; }

Supervisor::Supervisor(std::vector<std::string> argv, std::function<void()> checkpoint, ProcessExec& exec,
                       SupervisorOptions options)
    : argv_(std::move(argv)), checkpoint_(std::move(checkpoint)), exec_(exec), options_(options) {
  if (argv_.empty()) throw Error("supervisor: no program arguments (argv[0] at least)");
  restarts_ = restarts_from_environment();
}

void Supervisor::restart(std::string_view reason) {
  if (restarts_ >= options_.max_restarts)
    throw Error("supervisor: " + std::string(reason) + ", and the process has been restarted " +
                std::to_string(restarts_) + " times already (the limit): a fresh process makes no progress");
  checkpoint_();
  const std::string count = std::to_string(restarts_ + 1);
  if (::setenv(kRestartsVar, count.c_str(), 1) != 0)
    throw Error::from_errno(kRestartsVar, "supervisor: cannot set", errno);
  // An exec that returns or throws leaves this process running: its count must not grow.
  struct RestoreCount {
    std::string old;
    ~RestoreCount() { ::setenv(kRestartsVar, old.c_str(), 1); }
  } restore{std::to_string(restarts_)};
  exec_.exec(resume_arguments(argv_));
  throw Error("supervisor: " + std::string(reason) + ": restarting " + argv_[0] + " returned without an exec");
}

}  // namespace orion::runtime
