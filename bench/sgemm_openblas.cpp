#include <cblas.h>
#include <dlfcn.h>

#include "sgemm_backend.h"

namespace orion::bench {

std::string sgemm_library() {
  return std::string(openblas_get_config()) + ", core " + openblas_get_corename();
}

std::string sgemm_origin() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) && info.dli_fname ? info.dli_fname : "?";
}

void sgemm_set_threads(int threads) { openblas_set_num_threads(threads); }

void sgemm_run(bool trans_b, int M, int N, int K, const float* A, const float* B, float* C) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, K, B,
              trans_b ? K : N, 0.0f, C, N);
}

}  // namespace orion::bench
