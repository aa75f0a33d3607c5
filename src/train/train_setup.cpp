#include "train/train_setup.h"

#include <filesystem>

#include "core/error.h"
#include "dist/collective.h"
#include "runtime/device_factory.h"

namespace orion::train {

exec::Numerics train_precision(const std::string& device, const std::string& precision) {
  const bool on_ane = runtime::device_kind(device) != runtime::DeviceKind::cpu;
  const std::string p = precision.empty() ? (on_ane ? "f16" : "f32") : precision;
  if (p != "f32" && p != "f16") throw Error("unknown precision '" + p + "' (f32 or f16)");
  if (on_ane && p != "f16")
    throw Error("--device " + device + " computes in fp16: --precision " + p + " is not available there");
  return p == "f16" ? exec::Numerics::f16 : exec::Numerics::f32;
}

std::unique_ptr<TrainDevice> attach_train_device(RunOptions& run, const std::string& device,
                                                 const TrainDeviceOptions& options, std::vector<std::string> argv) {
  const runtime::DeviceKind kind = runtime::device_kind(device);
  if (kind == runtime::DeviceKind::cpu) return nullptr;
  const int rank = run.collective ? run.collective->rank() : 0;
  const int ranks = run.collective ? run.collective->size() : 1;
  const std::string kernels = ranks > 1 && rank > 0 ? "kernels.rank" + std::to_string(rank) : "kernels";
  auto d = std::make_unique<TrainDevice>(kind, options, std::move(argv),
                                         (std::filesystem::path(run.out) / kernels).string(), run.config.threads);
  run.gradients = d->gradients();
  return d;
}

}  // namespace orion::train
