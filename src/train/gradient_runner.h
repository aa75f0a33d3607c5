#pragma once
// Where the trainer's forward and backward pass runs. The trainer owns the step (data, loss
// scaling, AdamW); a runner computes one micro-batch's loss and gradients from the gradient
// graph (train/autodiff.h): on the CPU executor (cpu_gradient_runner), or on an ANE device
// (train/device_gradients.h).
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "runtime/device_graph.h"

namespace orion::train {

struct TrainConfig;

// The model's loss graph for (batch, seq): inputs tokens, positions and targets, each
// i32[batch * seq], and loss_weights f32[batch * seq], params by name, and one output `loss`,
// an f32 scalar: the weighted sum of the targets' losses (model/decoder_graph.h).
using LossGraphFn = std::function<ir::Graph(std::int64_t batch, std::int64_t seq)>;

class GradientRunner {
 public:
  virtual ~GradientRunner() = default;

  // At the start of every step, with the weights it computes with (the trainer's masters): a
  // device installs them here. Nothing of the step has happened yet, so a device that must
  // restart the process to compile (runtime/supervisor.h) leaves the run at a step boundary.
  virtual void prepare(const TensorMap& params) = 0;
  // At the end of a step that changed the weights, the next step's: a device may start
  // installing them while the caller finishes the step (logs, evaluates, checkpoints), so that
  // the next prepare() has less or nothing left to do. It must not restart the process here:
  // the step's log and checkpoint are not written yet. The tensors stay unchanged until the
  // next prepare().
  virtual void prefetch(const TensorMap& /*params*/) {}
  // One micro-batch. `feed`: the params, tokens, positions and targets (i32[batch * S]),
  // loss_weights (f32[batch * S]) and loss_scale (f32 scalar, the seed of the backward pass),
  // where S is the config's seq or, for record data, one of its buckets. Returns the loss, then one f32
  // gradient per name of `wrt` (the constructor's), of the loss times loss_scale.
  virtual std::vector<Tensor> run(const TensorMap& feed) = 0;
  // Floating-point operations (2 per multiply-add) of one micro-batch's matrix products.
  virtual double matmul_flops() const = 0;
  // A device runner's kernels, compiles, reloads and times; null on the CPU.
  virtual const runtime::DeviceGraphStats* device_stats() const { return nullptr; }
};

// Makes the runner for a trainer: its loss graphs, the params it differentiates for, its options.
using GradientRunnerFactory = std::function<std::unique_ptr<GradientRunner>(
    const LossGraphFn& loss, std::span<const std::string> wrt, const TrainConfig& config)>;

// The gradient graph of loss(batch, seq) on the CPU executor, in the config's numerics; its
// graphs' memory in `slots` (null: slots of its own), which nothing may use while it runs.
std::unique_ptr<GradientRunner> cpu_gradient_runner(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                    const TrainConfig& config,
                                                    std::shared_ptr<exec::SharedSlots> slots = nullptr);


// The gradient graph every runner runs: loss(batch, seq) differentiated for `wrt`, the seed
// scaled by the input loss_scale.
ir::Graph loss_gradient_graph(const LossGraphFn& loss, std::int64_t batch, std::int64_t seq,
                              std::span<const std::string> wrt);

// sum += term, element by element (f32 tensors of one shape): gradients summed over
// micro-batches or sequences.
void add_into(Tensor& sum, const Tensor& term);

}  // namespace orion::train
