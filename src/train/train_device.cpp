#include "train/train_device.h"

#include "core/error.h"
#include "runtime/device_factory.h"
#include "train/device_gradients.h"
#include "train/trainer.h"

namespace orion::train {

TrainDevice::TrainDevice(runtime::DeviceKind device, const TrainDeviceOptions& o, std::vector<std::string> argv,
                         std::string work_folder, int threads)
    : name_(std::string(runtime::device_kind_name(device))), options_(o), argv_(std::move(argv)), work_(std::move(work_folder)),
      budget_(o.compile_budget) {
  if (device == runtime::DeviceKind::cpu) throw Error("train: the cpu trains without a TrainDevice");
  runtime::DeviceOptions d;
  d.kind = device;
  d.faithful = o.faithful;
  d.compile_budget = o.compile_budget;
  d.reload_reads_weights = !o.stale_reload;
  d.threads = threads > 0 ? threads : 2;
  device_ = runtime::open_device(d);
  reload_ = std::make_unique<runtime::ReloadSupport>(*device_, budget_);
}

TrainDevice::~TrainDevice() = default;

std::function<GradientRunnerFactory(std::function<void()>)> TrainDevice::gradients() {
  return [this](std::function<void()> checkpoint) -> GradientRunnerFactory {
    supervisor_.emplace(argv_, std::move(checkpoint), exec_);
    return [this](const LossGraphFn& loss, std::span<const std::string> wrt, const TrainConfig& c) {
      DeviceGradientsOptions dg;
      dg.work_folder = work_;
      dg.supervisor = &*supervisor_;
      dg.weights = options_.weights == "baked" ? runtime::DeviceGraphWeights::baked : runtime::DeviceGraphWeights::inputs;
      return device_gradient_runner(loss, wrt, c, *device_, budget_, *reload_, dg);
    };
  };
}

std::string TrainDevice::describe() const {
  std::string s = name_ + ": a budget of " + std::to_string(budget_.limit()) + " compiles per process";
  if (supervisor_ && supervisor_->restarts() > 0) s += " (this process is restart " + std::to_string(supervisor_->restarts()) + ")";
  return s;
}

}  // namespace orion::train
