#pragma once
// Training on a device (`orion train --device ane-sim|ane`): the device the forward and backward kernels run on
// (train/device_gradients.h), the process's compile budget, and the supervisor that, when the
// budget is spent and weights cannot be reloaded, checkpoints the run and exec's the same
// command with --resume (runtime/supervisor.h).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/ane_device.h"
#include "runtime/compile_budget.h"
#include "runtime/device_factory.h"
#include "runtime/reload_probe.h"
#include "runtime/supervisor.h"
#include "train/gradient_runner.h"

namespace orion::train {

struct TrainDeviceOptions {
  // ane-sim only: the emulator's settings, to exercise the runtime's bookkeeping.
  bool faithful = false;     // past the budget the device returns garbage instead of refusing
  int compile_budget = 119;  // compiles per process (ANE030)
  bool stale_reload = false; // unload + load keeps the compiled weights (every step recompiles)
  // ane-sim and ane: "inputs" (weights written into the kernels' input surfaces each step, the
  // kernels compiled once) or "baked" (reloaded or recompiled each step).
  std::string weights = "inputs";
};

class TrainDevice {
 public:
  // `device`: ane-sim or ane (throws orion::Error for the cpu, and for ane where there is no
  // Neural Engine). `argv`: this process's arguments, for the restart. `work_folder`: the
  // kernels' files.
  TrainDevice(runtime::DeviceKind device, const TrainDeviceOptions& options, std::vector<std::string> argv,
              std::string work_folder, int threads);
  ~TrainDevice();

  // What train::RunOptions::gradients takes.
  std::function<GradientRunnerFactory(std::function<void()> checkpoint)> gradients();
  // "ane-sim: budget 119 compiles (this process: restart 2)"
  std::string describe() const;
  int restarts() const { return supervisor_ ? supervisor_->restarts() : 0; }

 private:
  std::string name_;
  TrainDeviceOptions options_;
  std::vector<std::string> argv_;
  std::string work_;
  std::unique_ptr<device::AneDevice> device_;
  runtime::CompileBudget budget_;
  std::unique_ptr<runtime::ReloadSupport> reload_;
  runtime::PosixExec exec_;
  std::optional<runtime::Supervisor> supervisor_;
};

}  // namespace orion::train
