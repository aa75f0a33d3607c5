#include "train/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace orion::train {

double LrSchedule::at(std::int64_t step) const {
  // Step s of the warm-up uses (s + 1) / warmup of the peak: the first step already learns.
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (step >= total) return min_lr;
  const double span = static_cast<double>(std::max<std::int64_t>(total - warmup, 1));
  const double progress = static_cast<double>(step - warmup) / span;
  return min_lr + 0.5 * (peak - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace orion::train
