// softmax_cross_entropy and its gradient: one row of V logits per target, fp32 arithmetic.
//
// The loss is logsumexp(x) - x[t] with the row's maximum subtracted before exp, so that no
// logit overflows; the gradient (softmax(x) - one_hot(t)) * dloss is computed from the logits
// again rather than from a stored softmax, which would be as large as the logits. Rows run in
// parallel, each on one thread in a fixed order (the same sums on any pool).
#include <algorithm>
#include <cmath>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"

namespace orion::exec::cpu::kernels {

namespace {

struct Rows {
  std::int64_t rows, v;
  const float* x;
  const std::int32_t* t;
};

Rows checked_rows(const KernelArgs& a) {
  const Tensor& logits = a.inputs[0];
  Rows r{a.inputs[1].numel(), logits.shape().back(), logits.data<float>(), a.inputs[1].data<std::int32_t>()};
  detail::check_indices(a.node, r.t, r.rows, r.v, "target", "the classes of logits " + shape_str(logits.shape()));
  return r;
}

// The row's maximum and the sum of exp(x - max).
std::pair<float, float> max_and_sum(const float* x, std::int64_t v) {
  const float m = *std::max_element(x, x + v);
  float s = 0.0f;
  for (std::int64_t j = 0; j < v; ++j) s += std::exp(x[j] - m);
  return {m, s};
}

}  // namespace

void softmax_cross_entropy(const KernelArgs& a) {
  const Rows r = checked_rows(a);
  float* out = a.output.data<float>();
  a.pool.parallel_for(0, r.rows, detail::grain_for(r.v), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const float* x = r.x + i * r.v;
      const auto [m, s] = max_and_sum(x, r.v);
      out[i] = std::log(s) + m - x[r.t[i]];
    }
  });
}

void softmax_cross_entropy_grad(const KernelArgs& a) {
  const Rows r = checked_rows(a);
  const float* dloss = a.inputs[2].data<float>();
  float* out = a.output.data<float>();
  a.pool.parallel_for(0, r.rows, detail::grain_for(r.v), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const float* x = r.x + i * r.v;
      float* o = out + i * r.v;
      const auto [m, s] = max_and_sum(x, r.v);
      const float scale = dloss[i] / s;
      for (std::int64_t j = 0; j < r.v; ++j) o[j] = std::exp(x[j] - m) * scale;
      o[r.t[i]] -= dloss[i];
    }
  });
}

}  // namespace orion::exec::cpu::kernels
