// The batched GEMVs' row-block driver (gemv_columns.h), and the batched forms of the dense
// products, gemv_f32_columns and gemv_f16_columns (gemv.h).
#include "exec/cpu/gemv_columns.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace orion::exec::cpu {

namespace detail {

void for_column_blocks(std::int64_t rows, std::int64_t cols, std::int64_t n, std::int64_t row_bytes, int per_pass,
                       const float* Y, ThreadPool& pool,
                       const std::function<void(std::int64_t j, int v, std::int64_t b0, std::int64_t b1)>& pass,
                       const std::function<void(std::int64_t b0, std::int64_t b1)>& done) {
  // With one pass for every vector, a block would only cut the rows' streams short.
  const std::int64_t block = n <= per_pass ? rows : std::max<std::int64_t>(4, kColumnBlockBytes / std::max<std::int64_t>(row_bytes, 1));
  for_rows(rows, cols * n, Y, pool, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t b0 = r0; b0 < r1; b0 += block) {
      const std::int64_t b1 = std::min(r1, b0 + block);
      for (std::int64_t j = 0; j < n; j += per_pass) pass(j, static_cast<int>(std::min<std::int64_t>(per_pass, n - j)), b0, b1);
      if (done) done(b0, b1);
    }
  });
}

namespace {

template <class Weight>
using DenseRows = void (*)(const Weight* W, const float* x, const float* bias, float* y, std::int64_t r0, std::int64_t r1,
                           std::int64_t cols);

// One vector of a pass goes through the row kernel (the batched kernels would do the same
// arithmetic with more reads of each row from L1).
template <class Weight>
void dense_columns(DenseRows<Weight> rows_kernel, DenseVectors<Weight> vectors, const Weight* W, const float* X,
                   const float* bias, float* Y, std::int64_t rows, std::int64_t cols, std::int64_t n, ThreadPool& pool,
                   const std::function<void(std::int64_t r0, std::int64_t r1)>& done) {
  const auto row_bytes = cols * static_cast<std::int64_t>(sizeof(Weight));
  for_column_blocks(rows, cols, n, row_bytes, vectors ? kColumnVectors : 1, Y, pool,
                    [&](std::int64_t j, int v, std::int64_t b0, std::int64_t b1) {
                      if (v == 1) return rows_kernel(W, X + j * cols, bias, Y + j * rows, b0, b1, cols);
                      const float* xs[kColumnVectors];
                      float* ys[kColumnVectors];
                      for (int i = 0; i < v; ++i) {
                        xs[i] = X + (j + i) * cols;
                        ys[i] = Y + (j + i) * rows;
                      }
                      vectors(W, xs, v, bias, ys, b0, b1, cols);
                    },
                    done);
}

void check_columns(const char* what, std::int64_t rows, std::int64_t cols, std::int64_t n) {
  check_sizes(what, rows, cols);
  if (n < 0) throw Error(std::string(what) + ": " + std::to_string(n) + " vectors");
}

}  // namespace

}  // namespace detail

void gemv_f32_columns(const float* W, const float* X, float* Y, std::int64_t rows, std::int64_t cols,
                      std::int64_t n, ThreadPool& pool, Isa isa,
                      const std::function<void(std::int64_t r0, std::int64_t r1)>& done) {
  detail::check_columns("gemv_f32_columns", rows, cols, n);
  const detail::RowKernels& k = detail::row_kernels(isa, "gemv_f32_columns");
  if (n == 0) return;
  if (cols == 0) {
    std::fill(Y, Y + n * rows, 0.0f);
    if (done) done(0, rows);
    return;
  }
  detail::dense_columns(k.f32, k.f32_vectors, W, X, nullptr, Y, rows, cols, n, pool, done);
}

void gemv_f16_columns(const std::uint16_t* W, const float* X, const float* bias, float* Y, std::int64_t rows,
                      std::int64_t cols, std::int64_t n, ThreadPool& pool, Isa isa, Activation act) {
  detail::check_columns("gemv_f16_columns", rows, cols, n);
  const detail::RowKernels& k = detail::row_kernels(isa, "gemv_f16_columns");
  if (cols == 0) {
    for (std::int64_t j = 0; j < n; ++j) detail::fill_bias(bias, Y + j * rows, rows, act);
    return;
  }
  if (n == 0) return;
  detail::dense_columns(k.f16, k.f16_vectors, W, X, bias, Y, rows, cols, n, pool, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t j = 0; j < n; ++j) apply_activation(act, Y + j * rows + r0, r1 - r0);
  });
}

}  // namespace orion::exec::cpu
