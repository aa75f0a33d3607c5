#pragma once
// The row-block driver of the batched GEMVs (gemv_f32_columns, gemv_f16_columns): n vectors
// against one matrix, W streamed from memory once per call. The rows go to the pool's threads in
// chunks (detail::for_rows); each chunk goes in blocks of rows that stay in L2 while every vector
// passes over them, a pass taking up to `per_pass` vectors against each row (the kernels'
// batched forms, kColumnVectors; 1 where an ISA has none). When one pass takes all the vectors,
// nothing is read twice and the chunk is one block: its rows one long stream through W.
#include <cstdint>
#include <functional>

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

}  // namespace orion::exec::cpu::detail
