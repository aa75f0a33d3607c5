#include "exec/cpu/openmp_threads.h"

namespace orion::exec::cpu {

void openmp_fork_join(int threads, void (*work)(void*), void* ctx) {
  // `work` never throws (ThreadPool keeps a chunk's exception for its caller), as an OpenMP
  // region requires.
#pragma omp parallel num_threads(threads)
  work(ctx);
}

}  // namespace orion::exec::cpu
