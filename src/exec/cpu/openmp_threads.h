#pragma once
// The executor's loops on OpenMP's threads. oneDNN (exec/cpu/gemm) runs its matrix products on
// OpenMP, whose threads spin for a while after each product; a second set of threads working
// on the same cores meanwhile (a ThreadPool of its own for the elementwise kernels) loses much
// of its time to them (GPT-2 124M's training step: docs/PERFORMANCE.md, "Choices", parallel
// loops on OpenMP's threads). One set of threads for both avoids the fight and keeps the spin's
// benefit, hot threads for the next section.
namespace orion::exec::cpu {

// A ThreadPool::ForkJoin: work(ctx) on `threads` OpenMP threads.
void openmp_fork_join(int threads, void (*work)(void*), void* ctx);

}  // namespace orion::exec::cpu
