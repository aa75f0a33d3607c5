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
  std::string out;  // stdout and stderr together
};

// `env` is a prefix of VAR=value assignments for the shell ("ORION_CACHE_DIR=/tmp/x ").
inline CliResult run_orion_env(const std::string& env, const std::string& args) {
  const char* bin = std::getenv("ORION_BIN");
  const std::string cmd = env + std::string(bin ? bin : ORION_BIN_PATH) + " " + args + " 2>&1";
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

inline CliResult run_orion(const std::string& args) { return run_orion_env("", args); }

}  // namespace orion::test
