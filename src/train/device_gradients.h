#pragma once
// The trainer's gradients on an ANE device (ane-sim, or the ANE): the gradient graph of one
// sequence (the ANE's layout holds one window of tokens, [1, C, 1, S]) run on a DeviceGraph,
// once per sequence of the micro-batch, the losses and gradients averaged on the host, which
// is the batch's gradient (the loss is a mean over tokens). Each step's weights are written
// into the kernels' weight surfaces in prepare() (the kernels compiled once), or with baked
// weights installed: reloaded, or compiled within the budget, or by a restart of the process.
// A device that refuses the weights-as-inputs kernels (their lowering or compile fails before
// any run went through) gets baked ones instead, with a warning on stderr: the reload and
// restart path is the fallback, not an error.
//
// The numerics are the device's: kernels in fp16; the host segments (the loss and its
// gradient, the embedding's gather and scatter, the weight gradients' sums over the tokens)
// in f32 on the values the kernels produced.
#include <memory>

#include "runtime/device_graph.h"
#include "train/gradient_runner.h"

namespace orion::train {

struct DeviceGradientsOptions {
  compile::AneTarget target;
  std::string work_folder;                    // the kernels' files; empty: a temporary folder
  runtime::Supervisor* supervisor = nullptr;  // restarts when the budget is spent
  int lanes = 2;  // a micro-batch's sequences in flight at once (runtime::DeviceGraph::run_many)
  // Weights as kernel inputs, written each step (compiled once), or baked and reinstalled.
  runtime::DeviceGraphWeights weights = runtime::DeviceGraphWeights::inputs;
};

// `device`, `budget` and `reload` must outlive the runner. Throws orion::Error when the graph
// cannot be compiled for the device, or needs more kernels than the budget allows at all.
std::unique_ptr<GradientRunner> device_gradient_runner(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                       const TrainConfig& config, device::AneDevice& device,
                                                       runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                                                       const DeviceGradientsOptions& options);

}  // namespace orion::train
