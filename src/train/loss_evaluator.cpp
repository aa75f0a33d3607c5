#include "train/loss_evaluator.h"

#include <algorithm>

#include "core/error.h"

namespace orion::train {

void fill_batch_feed(TensorMap& feed, const Batch& b, float scale) {
  const std::int64_t n = b.rows * b.seq;
  Tensor tokens(DType::i32, {n}), targets(DType::i32, {n}), positions(DType::i32, {n}), weights(DType::f32, {n});
  std::copy(b.tokens.begin(), b.tokens.end(), tokens.span<std::int32_t>().begin());
  std::copy(b.targets.begin(), b.targets.end(), targets.span<std::int32_t>().begin());
  auto pos = positions.span<std::int32_t>();
  auto w = weights.span<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % b.seq);
    w[static_cast<std::size_t>(i)] = b.weights[static_cast<std::size_t>(i)] * scale;
  }
  feed["tokens"] = tokens;
  feed["targets"] = targets;
  feed["positions"] = positions;
  feed["loss_weights"] = weights;
}

LossEvaluator::LossEvaluator(LossGraphFn loss, std::int64_t batch, exec::Numerics numerics, int threads,
                             std::shared_ptr<exec::SharedSlots> slots)
    : loss_(std::move(loss)),
      batch_(batch),
      options_{.numerics = numerics,
               .threads = threads,
               .shared_slots = slots ? std::move(slots) : std::make_shared<exec::SharedSlots>()} {}

EvalResult LossEvaluator::run(const TensorMap& params, BatchSource& source, std::int64_t batches) {
  double sum = 0;
  EvalResult r;
  TensorMap feed = params;
  for (std::int64_t i = 0; i < batches; ++i) {
    const Batch b = source.next();
    if (b.trained == 0) continue;
    auto& exec = by_seq_[b.seq];
    if (!exec) exec = std::make_unique<exec::CpuExecutor>(loss_(batch_, b.seq), options_);
    fill_batch_feed(feed, b, 1.0f / static_cast<float>(b.trained));
    sum += static_cast<double>(exec->run(feed)[0].span<const float>()[0]) * static_cast<double>(b.trained);
    r.tokens += b.trained;
  }
  r.loss = r.tokens > 0 ? sum / static_cast<double>(r.tokens) : 0.0;
  return r;
}

}  // namespace orion::train
