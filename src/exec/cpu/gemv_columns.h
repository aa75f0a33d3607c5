#pragma once
// The row-block driver of the batched GEMVs (gemv_f32_columns, gemv_f16_columns, gemv_q8_columns,
// gemv_q4_columns): n vectors against one matrix, W streamed from memory once per call. The rows
// go to the pool's threads in chunks (detail::for_rows); each chunk goes in blocks of rows that
// stay in L2 while every vector passes over them, a pass taking up to `per_pass` vectors against
// each row (the kernels' batched forms, kColumnVectors; 1 where an ISA has none). When one pass
// takes all the vectors, nothing is read twice and the chunk is one block: its rows one long
// stream through W.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"

namespace orion::exec::cpu::detail {

// Rows a block holds: about this many bytes of weights (and scales), which every pass after the
// first reads from L2.
inline constexpr std::int64_t kColumnBlockBytes = 256 * 1024;

// Rows [0, rows) of n vectors' products, rows of W `row_bytes` each (weights and scales): on
// the pool, pass(j, v, b0, b1) computes rows [b0, b1) of vectors [j, j + v) (v <= per_pass), and
// done(b0, b1), when given, runs once every vector has passed over the block, on the same thread.
// Y is the first vector's output (its alignment sets the chunks, as for_rows').
void for_column_blocks(std::int64_t rows, std::int64_t cols, std::int64_t n, std::int64_t row_bytes, int per_pass,
                       const float* Y, ThreadPool& pool,
                       const std::function<void(std::int64_t j, int v, std::int64_t b0, std::int64_t b1)>& pass,
                       const std::function<void(std::int64_t b0, std::int64_t b1)>& done);

// A quantised batched form's work after its checks (gemv_q8_columns', gemv_q4_columns'): the n
// vectors (X: rows of W.cols floats) quantised once each by quantize(x, out) on the calling
// thread, then kernel k's passes (k.rows for one vector, k.vectors for several) over W's blocks,
// rows `row_bytes` each, into Y's rows, and `act` on each block of every output once all have
// passed. The quantised activations are kept per calling thread and per type between calls, and
// the pool's threads reach them through pointers taken here: a lambda that named the
// thread_locals would see a worker's own.
template <class Quantised, class Kernel, class Weights, class Quantize>
void quantised_columns(const Kernel& k, const Weights& W, std::int64_t row_bytes, const float* X, const float* bias,
                       float* Y, std::int64_t n, ThreadPool& pool, Activation act, const Quantize& quantize) {
  if (W.cols == 0) {
    for (std::int64_t j = 0; j < n; ++j) fill_bias(bias, Y + j * W.rows, W.rows, act);
    return;
  }
  if (n == 0) return;
  thread_local std::vector<Quantised> scratch;
  thread_local std::vector<const Quantised*> activations;
  thread_local std::vector<float*> outputs;
  const auto count = static_cast<std::size_t>(n);
  if (scratch.size() < count) {
    scratch.resize(count);
    activations.resize(count);
    outputs.resize(count);
  }
  for (std::size_t v = 0; v < count; ++v) {
    quantize(X + static_cast<std::int64_t>(v) * W.cols, scratch[v]);
    activations[v] = &scratch[v];
    outputs[v] = Y + static_cast<std::int64_t>(v) * W.rows;
  }
  const Quantised* const* x = activations.data();
  float* const* y = outputs.data();
  for_column_blocks(
      W.rows, W.cols, n, row_bytes, k.vectors ? kColumnVectors : 1, Y, pool,
      [&](std::int64_t j, int v, std::int64_t b0, std::int64_t b1) {
        if (v > 1)
          k.vectors(W, x + j, v, bias, y + j, b0, b1);
        else
          k.rows(W, *x[j], bias, y[j], b0, b1);
      },
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t j = 0; j < n; ++j) apply_activation(act, y[j] + b0, b1 - b0);
      });
}

}  // namespace orion::exec::cpu::detail
