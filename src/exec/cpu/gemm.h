#pragma once
// Matrix-matrix products (prefill, training) through the library chosen at configure time
// (ORION_GEMM): oneDNN's sgemm, chosen over OpenBLAS and BLIS by measurement on x86
// (docs/PERFORMANCE.md, "Choices"), or a cblas: Accelerate on macOS, OpenBLAS on Linux
// (docs/PLATFORMS.md). gemm.cpp is the only door to it: no other file includes the library's
// header, so that changing the library changes that file alone.
#include <cstdint>
#include <functional>
#include <string>

namespace orion::exec::cpu {

enum class Transpose : bool { no = false, yes = true };

// Row-major C[M, N] = alpha * op(A) op(B) + beta * C, where op(A) is [M, K] and op(B) is
// [K, N]; A is stored [M, K] (or [K, M] when transposed) with rows `lda` floats apart, and so
// on. With beta == 0, C is not read (it may hold NaNs). Throws orion::Error for a negative
// size, a leading dimension shorter than a row, or sizes beyond 32-bit indices.
void sgemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc);

// The library keeps its own threads (OpenMP's, not Orion's pool). The count applies to the
// products called from the calling thread (OpenMP keeps it per thread): a session sets it to
// its own thread count before its products, and a pool task that calls sgemm sets 1 first.
void set_gemm_threads(int threads);
int gemm_threads();

// Runs fn(lo, hi) over [0, n), split into one contiguous range per thread, on the library's own
// threads (gemm_threads() of them), and returns when all are done; the first exception thrown
// is rethrown here. For the row-wise work between products: on the library's threads there is
// no hand-over of the cores to another pool (OpenMP's threads spin for a while after each
// product and would compete with it). sgemm called inside fn runs on its calling thread alone.
void gemm_parallel_for(std::int64_t n, const std::function<void(std::int64_t lo, std::int64_t hi)>& fn);

// The configure-time choice (ORION_GEMM) this build was made with: "onednn" or "cblas".
const char* gemm_configured();
// Library, version and the kernels it picked, for benchmark reports.
std::string gemm_library();
// The file the library's sgemm was loaded from, as the dynamic loader resolved it (proof of
// which library runs); "?" when the loader cannot say.
std::string gemm_library_file();

}  // namespace orion::exec::cpu
