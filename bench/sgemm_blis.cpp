#include <blis.h>
#include <dlfcn.h>

#include "sgemm_backend.h"

namespace orion::bench {

std::string sgemm_library() {
  return std::string("BLIS ") + bli_info_get_version_str() + ", arch " + bli_arch_string(bli_arch_query_id());
}

std::string sgemm_origin() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&bli_sgemm), &info) && info.dli_fname ? info.dli_fname : "?";
}

void sgemm_set_threads(int threads) { bli_thread_set_num_threads(threads); }

// BLIS's own API takes row and column strides, so row-major needs no cblas layer.
void sgemm_run(bool trans_b, int M, int N, int K, const float* A, const float* B, float* C) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, M, N, K, &one,
            const_cast<float*>(A), K, 1, const_cast<float*>(B), trans_b ? K : N, 1, &zero, C, N, 1);
}

}  // namespace orion::bench
