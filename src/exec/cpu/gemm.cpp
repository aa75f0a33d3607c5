#include "exec/cpu/gemm.h"

#include <cblas.h>

#include <limits>

#include "core/error.h"

namespace orion::exec::cpu {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error("sgemm: " + what);
}

// OpenBLAS (the LP64 build) indexes with int.
int to_int(std::int64_t v, const char* name) {
  check(v >= 0 && v <= std::numeric_limits<int>::max(), std::string(name) + " = " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

}  // namespace

void sgemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc) {
  const bool at = ta == Transpose::yes, bt = tb == Transpose::yes;
  const int m = to_int(M, "M"), n = to_int(N, "N"), k = to_int(K, "K");
  // A row of the stored matrix is K long for A, or M when A is stored transposed.
  check(lda >= std::max<std::int64_t>(1, at ? M : K), "lda = " + std::to_string(lda) + " is shorter than a row of A");
  check(ldb >= std::max<std::int64_t>(1, bt ? K : N), "ldb = " + std::to_string(ldb) + " is shorter than a row of B");
  check(ldc >= std::max<std::int64_t>(1, N), "ldc = " + std::to_string(ldc) + " is shorter than a row of C");
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, at ? CblasTrans : CblasNoTrans, bt ? CblasTrans : CblasNoTrans, m, n, k, alpha, A,
              to_int(lda, "lda"), B, to_int(ldb, "ldb"), beta, C, to_int(ldc, "ldc"));
}

void set_gemm_threads(int threads) {
  if (threads < 1) throw Error("set_gemm_threads: " + std::to_string(threads) + " threads");
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

int gemm_threads() { return openblas_get_num_threads(); }

std::string gemm_library() {
  return std::string(openblas_get_config()) + " (core " + openblas_get_corename() + ")";
}

}  // namespace orion::exec::cpu
