#pragma once
// What `orion train` and the Python module's orion.train decide the same way between their
// options and run_training: the precision a device computes in, and the device the forward and
// backward passes run on.
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/executor.h"
#include "train/train_device.h"
#include "train/train_run.h"

namespace orion::train {

// `precision` "" is the device's own: f32 on the cpu, f16 on ane-sim and ane, which have no
// other. Throws orion::Error for an unknown device or precision, or f32 asked of a device.
exec::Numerics train_precision(const std::string& device, const std::string& precision);

// On ane-sim or ane: the device the gradients run on, hooked into `run.gradients`; null on the
// cpu. Its kernels' files go beside the checkpoints in run.out, not into a temporary folder: a
// restart (an exec) runs no destructors and would leave one behind every time. Each rank of a
// data-parallel job compiles its own. `argv`: this process's arguments, which a restart exec's
// again with --resume.
std::unique_ptr<TrainDevice> attach_train_device(RunOptions& run, const std::string& device,
                                                 const TrainDeviceOptions& options, std::vector<std::string> argv);

}  // namespace orion::train
