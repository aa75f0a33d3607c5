// restart_job DIR VERSIONS BUDGET [--reload-reads-weights] [--resume]
//
// The exec-restart path end to end: the versions job (versions_job.h) on a faithful ane-sim
// whose compile budget is BUDGET, run through the runtime's VersionedKernel with a real
// supervisor. When the process runs out of compiles it checkpoints to DIR/checkpoint.bin and
// execs itself with --resume, as often as needed; the last process writes every version's
// outputs and the number of processes to DIR/outputs.bin. Exit 0 on success, 1 with the error.
#include <filesystem>
#include <iostream>
#include <string>

#include "core/error.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"
#include "runtime/supervisor.h"
#include "runtime/versioned_kernel.h"
#include "versions_job.h"

namespace {

int to_int(const std::string& s, const char* what) {
  std::size_t used = 0;
  const int n = std::stoi(s, &used);
  if (used != s.size()) throw orion::Error(std::string("restart_job: ") + what + " is not a number: " + s);
  return n;
}

int run(int argc, char** argv) {
  using namespace orion;
  const std::vector<std::string> args = runtime::arguments(argc, argv);
  std::vector<std::string> positional;
  bool reload_reads_weights = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == runtime::kResumeFlag) continue;
    if (args[i] == "--reload-reads-weights")
      reload_reads_weights = true;
    else
      positional.push_back(args[i]);
  }
  if (positional.size() != 3) throw Error("usage: restart_job DIR VERSIONS BUDGET [--reload-reads-weights] [--resume]");
  const std::string dir = positional[0];
  const int versions = to_int(positional[1], "VERSIONS"), device_budget = to_int(positional[2], "BUDGET");
  const std::string checkpoint = dir + "/checkpoint.bin";

  testing_job::JobState state;
  if (runtime::has_resume_flag(args)) {
    state = testing_job::load_state(checkpoint);
    ++state.processes;
  }

  device::AneSim device(testing_job::faithful_sim(device_budget, reload_reads_weights));
  runtime::CompileBudget budget(device_budget);
  runtime::ReloadSupport reload(device, budget);
  runtime::PosixExec exec;
  runtime::Supervisor supervisor(args, [&] { testing_job::save_state(checkpoint, state); }, exec);
  runtime::VersionedKernel kernel(device, budget, reload, dir + "/kernel", &supervisor);

  const int first = state.next;
  for (; state.next < versions; ++state.next) {
    const std::string staging = dir + "/staging";
    const compile::KernelIo io = testing_job::write_version(state.next, staging);
    kernel.install(staging);  // may not return: checkpoint and exec
    state.outputs.push_back(testing_job::evaluate(device, kernel.program(), io));
  }
  testing_job::save_state(dir + "/outputs.bin", state);
  std::cout << "restart_job: process " << state.processes << " ran versions " << first << ".." << versions - 1
            << " (" << device.compiles() << " compiles, " << kernel.stats().reloads << " reloads)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "restart_job: " << e.what() << "\n";
    return 1;
  }
}
