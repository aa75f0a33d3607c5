#pragma once
// How the CLI tests start an MPI job of the built orion (tests/cli/data_parallel_cli_test.cpp,
// tests/cli/pipeline_cli_test.cpp): loopback only, any number of ranks on two cores, and told
// that running as root (CI) is meant.
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace orion::test {

inline bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// The command's prefix: "mpirun -np N ... " before the program.
inline std::string mpirun(int ranks) {
  return "mpirun -np " + std::to_string(ranks) + " --oversubscribe --bind-to none --mca btl self,vader " +
         (geteuid() == 0 ? "--allow-run-as-root " : "");
}

}  // namespace orion::test
