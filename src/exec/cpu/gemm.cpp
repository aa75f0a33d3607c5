#include "exec/cpu/gemm.h"

// The library is chosen at configure time (ORION_GEMM, docs/PLATFORMS.md): oneDNN by default,
// or any cblas, which is Apple's Accelerate on macOS and OpenBLAS on Linux. Both serve the same
// contract and the same tests (tests/exec/gemm_test.cpp runs against each).
#if ORION_GEMM_CBLAS
#if defined(__APPLE__)
#include <Accelerate/Accelerate.h>
#else
#include <cblas.h>
#endif
#else
#include <oneapi/dnnl/dnnl.h>
#endif
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <exception>
#include <limits>

#include "core/error.h"

namespace orion::exec::cpu {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error("sgemm: " + what);
}

#if !ORION_GEMM_CBLAS
std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
}
#endif

}  // namespace

void sgemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc) {
  const bool at = ta == Transpose::yes, bt = tb == Transpose::yes;
  check(M >= 0 && N >= 0 && K >= 0, "negative size " + std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K));
  // oneDNN's gemm indexes with 32-bit ints inside, whatever dnnl_dim_t says, and cblas takes int.
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  check(M <= kMax && N <= kMax && K <= kMax && lda <= kMax && ldb <= kMax && ldc <= kMax, "a size beyond 32-bit indices");
  // A row of the stored matrix is K long for A, or M when A is stored transposed.
  check(lda >= std::max<std::int64_t>(1, at ? M : K), "lda = " + std::to_string(lda) + " is shorter than a row of A");
  check(ldb >= std::max<std::int64_t>(1, bt ? K : N), "ldb = " + std::to_string(ldb) + " is shorter than a row of B");
  check(ldc >= std::max<std::int64_t>(1, N), "ldc = " + std::to_string(ldc) + " is shorter than a row of C");
  if (M == 0 || N == 0) return;
#if ORION_GEMM_CBLAS
  // The reference BLAS's rule, which OpenBLAS and Accelerate follow: with beta == 0, C is
  // written without being read, so NaNs in it do not survive.
  cblas_sgemm(CblasRowMajor, at ? CblasTrans : CblasNoTrans, bt ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
              static_cast<int>(ldc));
#else
  const dnnl_status_t st = dnnl_sgemm(at ? 'T' : 'N', bt ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  check(st == dnnl_success, "oneDNN failed with status " + std::to_string(static_cast<int>(st)));
#endif
}

// Debian's oneDNN runs on OpenMP, whose thread count belongs to the calling thread. A cblas keeps
// threads of its own (Accelerate's are not adjustable; OpenBLAS reads OPENBLAS_NUM_THREADS):
// there the count is that of gemm_parallel_for alone.
void set_gemm_threads(int threads) {
  if (threads < 1) throw Error("set_gemm_threads: " + std::to_string(threads) + " threads");
  omp_set_num_threads(threads);
}

int gemm_threads() { return omp_get_max_threads(); }

void gemm_parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  std::exception_ptr error;
#pragma omp parallel
  {
    const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    if (lo < hi) {
      try {
        omp_set_num_threads(1);  // this thread's own products (nested regions only)
        fn(lo, hi);
      } catch (...) {
#pragma omp critical(orion_gemm_parallel_for)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

const char* gemm_configured() { return ORION_GEMM_CBLAS ? "cblas" : "onednn"; }

std::string gemm_library() {
#if ORION_GEMM_CBLAS && defined(__APPLE__)
  return "cblas: Accelerate";
#elif ORION_GEMM_CBLAS && defined(OPENBLAS_VERSION)
  // OPENBLAS_VERSION reads " OpenBLAS 0.3.21 "; the config names the kernel family picked.
  std::string config = openblas_get_config();
  return "cblas: " + config + ", core " + openblas_get_corename();
#elif ORION_GEMM_CBLAS
  return "cblas";
#else
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         " (OpenMP, " + isa_name(dnnl_get_effective_cpu_isa()) + ")";
#endif
}

std::string gemm_library_file() {
#if ORION_GEMM_CBLAS
  void* symbol = reinterpret_cast<void*>(&cblas_sgemm);
#else
  void* symbol = reinterpret_cast<void*>(&dnnl_sgemm);
#endif
  Dl_info info{};
  return dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : "?";
}

}  // namespace orion::exec::cpu
