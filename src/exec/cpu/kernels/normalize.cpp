// Softmax along any axis; layer_norm and rms_norm over the last axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"
#include "ir/type_rules.h"

namespace orion::exec::cpu::kernels {

namespace {

using detail::grain_for;

// Softmax of contiguous rows: out[r, :] = exp(x[r, :] - max) / sum. The maximum is subtracted
// so that exp never overflows; the denominator is accumulated in double.
void softmax_rows(const float* x, float* out, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, xr[j]);
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      o[j] = std::exp(xr[j] - mx);
      sum += o[j];
    }
    const auto inv = static_cast<float>(1.0 / sum);
    for (std::int64_t j = 0; j < n; ++j) o[j] *= inv;
  }
}

// Softmax along the middle axis of [.., n, inner] for `len` consecutive positions of the inner
// axis starting at x: the rows are strided by `inner`, so the work goes across them, keeping
// every access contiguous.
constexpr std::int64_t kSoftmaxBlock = 64;

void softmax_strided(const float* x, float* out, std::int64_t n, std::int64_t inner, std::int64_t len) {
  float mx[kSoftmaxBlock];
  double sum[kSoftmaxBlock];
  for (std::int64_t i = 0; i < len; ++i) {
    mx[i] = -std::numeric_limits<float>::infinity();
    sum[i] = 0;
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < len; ++i) mx[i] = std::max(mx[i], x[j * inner + i]);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < len; ++i) {
      const float e = std::exp(x[j * inner + i] - mx[i]);
      out[j * inner + i] = e;
      sum[i] += e;
    }
  float inv[kSoftmaxBlock];
  for (std::int64_t i = 0; i < len; ++i) inv[i] = static_cast<float>(1.0 / sum[i]);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < len; ++i) out[j * inner + i] *= inv[i];
}

}  // namespace

void softmax(const KernelArgs& a) {
  const Tensor& tx = a.inputs[0];
  if (tx.numel() == 0) return;
  const Shape& s = tx.shape();
  const auto axis = static_cast<std::size_t>(ir::normalize_axis(a.node.attr_int("axis"), tx.rank()));
  const std::int64_t outer = detail::dims_product(s, 0, axis);
  const std::int64_t n = s[axis];
  const std::int64_t inner = detail::dims_product(s, axis + 1, s.size());
  const float* x = tx.data<float>();
  float* out = a.output.data<float>();
  if (inner == 1) {
    a.pool.parallel_for(0, outer, grain_for(4 * n), [&](std::int64_t lo, std::int64_t hi) {
      softmax_rows(x + lo * n, out + lo * n, hi - lo, n);
    });
    return;
  }
  const std::int64_t blocks = (inner + kSoftmaxBlock - 1) / kSoftmaxBlock;
  const std::int64_t work = 4 * n * std::min(inner, kSoftmaxBlock);
  a.pool.parallel_for(0, outer * blocks, grain_for(work), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t t = lo; t < hi; ++t) {
      const std::int64_t o = t / blocks;
      const std::int64_t i0 = (t % blocks) * kSoftmaxBlock;
      const std::int64_t off = o * n * inner + i0;
      softmax_strided(x + off, out + off, n, inner, std::min(kSoftmaxBlock, inner - i0));
    }
  });
}

// Statistics are accumulated in double, the variance in a second pass over the row (no
// cancellation of E[x^2] - E[x]^2); the variance is the biased one, as in torch.
void layer_norm(const KernelArgs& a) {
  const Tensor& tx = a.inputs[0];
  if (tx.numel() == 0) return;
  const std::int64_t c = tx.shape().back();
  const std::int64_t rows = tx.numel() / c;
  const float* x = tx.data<float>();
  const float* gamma = a.inputs[1].data<float>();
  const float* beta = a.inputs[2].data<float>();
  float* out = a.output.data<float>();
  const double eps = a.node.attr_real("epsilon");
  a.pool.parallel_for(0, rows, grain_for(3 * c), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * c;
      float* o = out + r * c;
      double sum = 0;
      for (std::int64_t j = 0; j < c; ++j) sum += xr[j];
      const double mean = sum / static_cast<double>(c);
      double sq = 0;
      for (std::int64_t j = 0; j < c; ++j) {
        const double d = xr[j] - mean;
        sq += d * d;
      }
      const double var = sq / static_cast<double>(c);
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (std::int64_t j = 0; j < c; ++j)
        o[j] = static_cast<float>((xr[j] - mean) * rstd) * gamma[j] + beta[j];
    }
  });
}

void rms_norm(const KernelArgs& a) {
  const Tensor& tx = a.inputs[0];
  if (tx.numel() == 0) return;
  const std::int64_t c = tx.shape().back();
  const std::int64_t rows = tx.numel() / c;
  const float* x = tx.data<float>();
  const float* weight = a.inputs[1].data<float>();
  float* out = a.output.data<float>();
  const double eps = a.node.attr_real("epsilon");
  a.pool.parallel_for(0, rows, grain_for(2 * c), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * c;
      float* o = out + r * c;
      double sq = 0;
      for (std::int64_t j = 0; j < c; ++j) sq += static_cast<double>(xr[j]) * xr[j];
      const auto rstd = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(c) + eps));
      for (std::int64_t j = 0; j < c; ++j) o[j] = xr[j] * rstd * weight[j];
    }
  });
}

}  // namespace orion::exec::cpu::kernels
