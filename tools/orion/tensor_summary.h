#pragma once
// How the CLI shows a tensor: its type, statistics and first values, on one or two lines.
#include <string>

#include "core/tensor.h"

namespace orion::cli {

struct TensorStats {
  double mean = 0, stddev = 0, min = 0, max = 0;
  std::int64_t non_finite = 0;
};

TensorStats tensor_stats(const Tensor& t);
// "f32[64, 256]  mean 0.0012  std 1.01  min -3.9  max 4.2\n  [0.12, -0.53, ...]"
std::string summarize(const Tensor& t, int first_values = 8);
// ||got - want||_2 / ||want||_2 over all elements: how the demo states an error against f32.
double relative_rms(const Tensor& want, const Tensor& got);

}  // namespace orion::cli
