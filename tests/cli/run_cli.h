#pragma once
// Runs the built `orion` binary (ORION_BIN_PATH from CMake, or $ORION_BIN) and captures its output.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

namespace orion::test {

struct CliResult {
  int status = -1;
  std::string out;  // what it printed (run_orion: stdout and stderr together)
};

// The built orion: $ORION_BIN, else the build's.
inline std::string orion_bin() {
  const char* bin = std::getenv("ORION_BIN");
  return bin ? bin : ORION_BIN_PATH;
}

// A shell command's exit status and what it wrote to stdout (the command redirects the rest).
inline CliResult run_command(const std::string& cmd) {
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// `env` is a prefix of VAR=value assignments for the shell ("ORION_CACHE_DIR=/tmp/x ").
inline CliResult run_orion_env(const std::string& env, const std::string& args) {
  return run_command(env + orion_bin() + " " + args + " 2>&1");
}

inline CliResult run_orion(const std::string& args) { return run_orion_env("", args); }

}  // namespace orion::test
