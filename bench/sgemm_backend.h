#pragma once
// One BLAS behind the comparison driver (sgemm_compare.cpp): each sgemm_<library>.cpp defines
// these for its library, and each is linked into its own executable, because OpenBLAS and
// BLIS export the same cblas symbols and cannot share a process.
#include <string>

namespace orion::bench {

// The library's name, version and the kernel family it picked for this CPU.
std::string sgemm_library();
// The file the sgemm symbol was resolved from at run time (proof of which library ran).
std::string sgemm_origin();
void sgemm_set_threads(int threads);
// Row-major C[M, N] = A[M, K] op(B), op(B) = B^T when `trans_b` (B stored [N, K]), else B
// stored [K, N].
void sgemm_run(bool trans_b, int M, int N, int K, const float* A, const float* B, float* C);

}  // namespace orion::bench
