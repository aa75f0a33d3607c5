#pragma once
// The learning-rate schedule: linear warm-up from 0 to the peak over `warmup` steps, then a
// cosine decay to `min_lr` at `total` steps (as llm.c and nanoGPT train GPT-2). Steps count
// from 0; past `total` the rate stays at `min_lr`.
#include <cstdint>

namespace orion::train {

struct LrSchedule {
  double peak = 3e-4;
  double min_lr = 0.0;
  std::int64_t warmup = 0;
  std::int64_t total = 1;

  double at(std::int64_t step) const;
};

}  // namespace orion::train
