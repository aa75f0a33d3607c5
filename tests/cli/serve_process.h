#pragma once
// `orion serve` as a child process for the CLI tests (tests/cli/serve_cli_test.cpp,
// tests/cli/pipeline_cli_test.cpp), and curl to talk to it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "cli/run_cli.h"

namespace orion::test {

// The server as a child process: started with --port 0, its port read from its first line on
// stderr, the rest of stderr collected; SIGTERM and a wait when it goes.
class ServeProcess {
 public:
  // `launcher`: a prefix of the command ("mpirun -np 2 ... ").
  ServeProcess(const std::string& model, const std::string& extra, const std::string& launcher = "") {
    // Made before the fork: the child only execs.
    const std::string cmd = "exec " + launcher + orion_bin() + " serve -m " + model + " --port 0 " + extra;
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
    reader_ = std::thread([this] {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd_, buf, sizeof buf)) > 0;) {
        std::lock_guard lock(mu_);
        log_.append(buf, static_cast<std::size_t>(n));
      }
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (port_ == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::lock_guard lock(mu_);
      // "on http://HOST:PORT/", whichever IPv4 host it listens on.
      const std::size_t at = log_.find(" on http://");
      const std::size_t colon = at == std::string::npos ? at : log_.find(':', at + 11);
      if (colon != std::string::npos) port_ = std::atoi(log_.c_str() + colon + 1);
      if (log_.find("error") != std::string::npos) break;
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, &status_, 0);
    }
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Whether the process is still running (it has not exited or crashed).
  bool alive() {
    return pid_ > 0 && ::waitpid(pid_, &status_, WNOHANG) == 0;
  }
  // Its resident memory in kB (/proc/PID/status's VmRSS), or -1.
  long rss_kb() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
  }
  std::string log() {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1, port_ = 0, status_ = 0;
  std::thread reader_;
  std::mutex mu_;
  std::string log_;
};

struct Http {
  int status = 0;
  std::string body;
};

// curl with `args`, the body and the status code back.
inline Http curl(const std::string& args) {
  const std::string out = run_command("curl -s -S -w '\\n%{http_code}' " + args + " 2>&1").out;
  const std::size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return {0, out};
  return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
}

}  // namespace orion::test
