#pragma once
// Probes of what this machine can do, for judging the CPU kernels against its limits: memory
// read bandwidth (what bounds decoding, which streams every weight once per token) and the
// peak f32 FMA rate (what bounds compute-heavy kernels). Each call measures afresh; they take
// from milliseconds to about a second, so call them from benchmarks and tools, not kernels.
#include <cstddef>

#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"

namespace orion::exec::cpu {

// Streaming read bandwidth in GB/s (10^9 B/s). A buffer of `bytes` (default 1 GiB, far larger
// than the caches) is allocated and written once, then read by the threads of `pool`, in 32
// pieces per thread that each free thread takes in turn (as the kernels take row chunks), each
// piece as four sequential streams at once, with the widest loads of best_isa() into eight
// independent accumulators, reading every byte; the
// result is the best of `repeats` timed passes after one warm-up pass (bytes read / wall time
// of the pass, which includes waking the pool). Called from inside a parallel_for of the same
// pool it runs on one thread. Throws orion::Error when bytes < 1 MiB or repeats < 1.
double measure_read_bandwidth_gbps(ThreadPool& pool, std::size_t bytes = std::size_t{1} << 30,
                                   int repeats = 5);

// Peak f32 FMA throughput in GFLOP/s (2 flops per FMA lane) over the pool's threads with
// `isa`: every thread runs many independent FMA chains held in registers (24 zmm, 12 ymm or
// 24 NEON q registers; the scalar path counts a multiply and an add as 2 flops), no memory
// traffic. Best of 3
// timed runs each long enough (about 20 ms) to swamp the cost of waking the pool. Throws
// orion::Error for an `isa` this CPU cannot run.
double measure_fma_peak_gflops(ThreadPool& pool, Isa isa = best_isa());

}  // namespace orion::exec::cpu
