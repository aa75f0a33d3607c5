#pragma once
// The forward loss over batches (evaluation: validation during training, the test split at
// its end, and `orion perplexity --data`), on the CPU executor: one graph per sequence bucket,
// made when first needed. Each batch's loss weights are its trained targets' over their count,
// and the batches' losses are summed weighted by that count: the mean over every trained
// target, which a masked prompt's tokens and padding never enter.
#include <cstdint>
#include <map>
#include <memory>

#include "exec/cpu/executor.h"
#include "train/data/data_loader.h"
#include "train/gradient_runner.h"

namespace orion::train {

struct EvalResult {
  double loss = 0;         // mean next-token loss over the trained targets (nats)
  std::int64_t tokens = 0;  // trained targets scored
};

// The feed of one batch for a loss graph: tokens, targets, positions (from 0 in every row)
// and loss_weights = weights * `scale`.
void fill_batch_feed(TensorMap& feed, const Batch& batch, float scale);

class LossEvaluator {
 public:
  // The buckets' graphs share `slots` (null: slots of their own), which nothing may use while
  // run() runs.
  LossEvaluator(LossGraphFn loss, std::int64_t batch, exec::Numerics numerics, int threads,
                std::shared_ptr<exec::SharedSlots> slots = nullptr);
  // `batches` batches of `source` with the weights `params` (bound by name).
  EvalResult run(const TensorMap& params, BatchSource& source, std::int64_t batches);

 private:
  LossGraphFn loss_;
  std::int64_t batch_;
  exec::CpuOptions options_;
  std::map<std::int64_t, std::unique_ptr<exec::CpuExecutor>> by_seq_;
};

}  // namespace orion::train
