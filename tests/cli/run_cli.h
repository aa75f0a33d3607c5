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

inline CliResult run_orion(const std::string& args) {
  const char* bin = std::getenv("ORION_BIN");
  const std::string cmd = std::string(bin ? bin : ORION_BIN_PATH) + " " + args + " 2>&1";
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

}  // namespace orion::test
