#include "train_device.h"

#include "core/error.h"
#include "device/ane_bridge_apple.h"
#include "device/ane_sim.h"
#include "train/device_gradients.h"
#include "train/trainer.h"

namespace orion::cli {

CLI::App* add_train_device_options(CLI::App* cmd, TrainDeviceOptions& o) {
  auto* g = cmd->add_option_group("ane-sim", "The emulator's settings (--device ane-sim), to exercise the runtime's bookkeeping");
  g->add_flag("--ane-faithful", o.faithful, "Past its compile budget the emulator returns garbage silently, as the ANE does");
  g->add_option("--ane-compile-budget", o.compile_budget, "Compiles the emulated device takes per process (ANE030)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  g->add_flag("--ane-stale-reload", o.stale_reload,
              "Unload + load keeps the compiled weights (as on some machines): every step recompiles, and a spent "
              "budget restarts the process");
  cmd->add_option("--ane-weights", o.weights,
                  "ane-sim and ane: weights as kernel inputs written each step, each kernel compiled once (inputs), or "
                  "baked into the kernels and reloaded or recompiled each step (baked)")
      ->check(CLI::IsMember({"inputs", "baked"}))
      ->capture_default_str();
  return g;
}

TrainDevice::TrainDevice(const std::string& device, const TrainDeviceOptions& o, std::vector<std::string> argv,
                         std::string work_folder, int threads)
    : name_(device), options_(o), argv_(std::move(argv)), work_(std::move(work_folder)), budget_(o.compile_budget) {
  if (device == "ane") {
    device_ = device::open_ane_device();
  } else {
    device::AneSimOptions so;
    so.faithful = o.faithful;
    so.compile_budget = o.compile_budget;
    so.reload_reads_weights = !o.stale_reload;
    so.threads = threads > 0 ? threads : 2;
    device_ = std::make_unique<device::AneSim>(so);
  }
  reload_ = std::make_unique<runtime::ReloadSupport>(*device_, budget_);
}

TrainDevice::~TrainDevice() = default;

std::function<train::GradientRunnerFactory(std::function<void()>)> TrainDevice::gradients() {
  return [this](std::function<void()> checkpoint) -> train::GradientRunnerFactory {
    supervisor_.emplace(argv_, std::move(checkpoint), exec_);
    return [this](const train::LossGraphFn& loss, std::span<const std::string> wrt, const train::TrainConfig& c) {
      train::DeviceGradientsOptions dg;
      dg.work_folder = work_;
      dg.supervisor = &*supervisor_;
      dg.weights = options_.weights == "baked" ? runtime::DeviceGraphWeights::baked : runtime::DeviceGraphWeights::inputs;
      return train::device_gradient_runner(loss, wrt, c, *device_, budget_, *reload_, dg);
    };
  };
}

std::string TrainDevice::describe() const {
  std::string s = name_ + ": a budget of " + std::to_string(budget_.limit()) + " compiles per process";
  if (supervisor_ && supervisor_->restarts() > 0) s += " (this process is restart " + std::to_string(supervisor_->restarts()) + ")";
  return s;
}

}  // namespace orion::cli
