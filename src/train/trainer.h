#pragma once
// The trainer: one optimizer step is `accum` micro-batches of forward and backward through one
// gradient graph (autodiff of the model's loss graph), the sum of their gradients checked for
// inf/NaN, then AdamW on fp32 master weights. In f16 numerics (the ANE's: every tensor rounded to
// fp16) the loss is scaled dynamically and the weights are clamped to the fp16 range where they
// are handed to the device; a step whose gradients are not finite is skipped, so a NaN never
// reaches the weights.
//
// Everything a step depends on (weights, moments, loss scale, data position, step count) is in
// the state the trainer saves and restores, and each step is a pure function of it: a run
// resumed from a checkpoint is bit-identical to one that was never interrupted (with the same
// thread count: the kernels are deterministic for a given one).
#include <cstdint>
#include <functional>
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "dist/collective.h"
#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "train/optim/adamw.h"
#include "train/data/data_loader.h"
#include "train/gradient_runner.h"
#include "train/loss_evaluator.h"
#include "train/optim/loss_scaler.h"
#include "train/optim/lr_schedule.h"

namespace orion::train {

struct TrainConfig {
  std::int64_t steps = 1000;
  std::int64_t batch = 4;  // sequences per micro-batch
  std::int64_t seq = 64;   // tokens per sequence
  std::int64_t accum = 1;  // micro-batches per optimizer step
  double lr = 3e-4, min_lr_fraction = 0.1;
  std::int64_t warmup = 0;
  AdamWConfig adamw;
  exec::Numerics precision = exec::Numerics::f32;
  // Dynamic loss scaling; nullopt: on in f16, off in f32.
  std::optional<bool> loss_scaling;
  std::uint64_t seed = 0;  // the data order
  int threads = 0;
  // Record data (JSONL): the sequence buckets batches are padded to (empty: the device's
  // default, train/data/record_loader.h's sequence_buckets), and whether records longer than
  // seq are skipped rather than cut.
  std::vector<std::int64_t> buckets;
  bool skip_long = false;

  LrSchedule schedule() const;
  bool scaling() const { return loss_scaling.value_or(precision == exec::Numerics::f16); }
  // The options that fix a run's trajectory, for checkpoints: a resumed run must match them.
  nlohmann::json identity() const;
};

struct StepStats {
  std::int64_t step = 0;  // steps done, this one included
  double loss = 0;        // mean over the micro-batches, unscaled
  double lr = 0;
  double grad_norm = 0;   // global norm before clipping (0 for a skipped step)
  double loss_scale = 1;
  bool skipped = false;   // gradients were not finite: the weights were not touched
  std::int64_t tokens = 0;          // positions run, padding included
  std::int64_t trained_tokens = 0;  // targets the loss covered
  double seconds = 0;
  // Data parallelism: the bytes each rank's gradients and loss put into the sum, and the time
  // the sum took (waiting for the slowest rank included).
  std::int64_t reduced_bytes = 0;
  double reduce_seconds = 0;
};

// What the trainer draws batches from (train/train_data.h makes it from a token file).
struct TrainData {
  std::unique_ptr<BatchSource> train;
  // A new pass over a held-out split, the same batches every time; null: the split is absent.
  std::function<std::unique_ptr<BatchSource>()> val, test;
  // Batches in one whole pass of each (0: a stream, which has no end).
  std::int64_t val_batches = 0, test_batches = 0;
};

class Trainer {
 public:
  // `params`: the initial weights by the loss graph's param names (copied into fp32 masters).
  // `gradients` makes the runner of the forward and backward pass (null: the CPU executor).
  Trainer(const LossGraphFn& loss_graph, const TensorMap& params, const TrainConfig& config, TrainData data,
          const GradientRunnerFactory& gradients = nullptr);
  // The token file's data (train/train_data.h's make_train_data).
  Trainer(const LossGraphFn& loss_graph, const TensorMap& params, const TrainConfig& config,
          std::shared_ptr<const TokenFile> data, const GradientRunnerFactory& gradients = nullptr);
  ~Trainer();

  // One optimizer step: its `accum` batches are drawn first, and every trained target of them
  // weighs 1 / (their trained targets), so that the step's loss is the mean over them.
  StepStats step();
  // Mean loss over the trained targets of the validation split's first `batches` batches (the
  // same ones every time); batches <= 0, or more than the split holds: the whole split.
  double evaluate(std::int64_t batches);
  // The same over the test split; nullopt when there is none.
  std::optional<EvalResult> evaluate_test();
  bool has_validation() const;

  std::int64_t steps_done() const;
  const TrainConfig& config() const;
  const TensorMap& params() const;
  std::int64_t skipped_steps() const;
  std::int64_t clamped_values() const;  // weights clamped to +-65504 where handed to the device
  // Floating-point operations (2 per multiply-add) of one micro-batch's matrix products, forward
  // and backward: what `orion bench train` divides by the time.
  double matmul_flops_per_micro_batch() const;
  // Data parallelism: from the next step, this process is rank `c->rank()` of `c->size()`. Each
  // rank draws all of a step's micro-batches (their trained targets weigh the loss) but runs only
  // those whose index is its rank modulo the size; the gradients and the loss are summed over the
  // ranks in rank order (dist/collective.h), and every rank takes the same optimizer step. Throws
  // orion::Error when `accum` is not a multiple of the size.
  void distribute(std::shared_ptr<dist::Collective> c);
  // The device's kernels, compiles and reloads when the gradients run on one; null on the CPU.
  const runtime::DeviceGraphStats* device_stats() const;

  // What a checkpoint holds besides the weights: the optimizer's moments, and the rest as JSON.
  TensorMap optimizer_state() const;
  nlohmann::json state() const;
  // Continues from a checkpoint's weights, moments and state; errors name `source` when the
  // state does not fit this trainer (another model, other options).
  void restore(const TensorMap& params, const TensorMap& optimizer, const nlohmann::json& state,
               const std::string& source);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orion::train
