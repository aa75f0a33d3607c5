// Orion's own sgemm (exec/cpu/gemm.cpp) as a backend of the comparison driver: linked with the
// gemm file compiled for oneDNN (bench_sgemm_dnnl) or for a cblas (bench_sgemm_cblas).
#include "exec/cpu/gemm.h"
#include "sgemm_backend.h"

namespace orion::bench {

std::string sgemm_library() { return exec::cpu::gemm_library(); }
std::string sgemm_origin() { return exec::cpu::gemm_library_file(); }
void sgemm_set_threads(int threads) { exec::cpu::set_gemm_threads(threads); }

void sgemm_run(bool trans_b, int M, int N, int K, const float* A, const float* B, float* C) {
  using exec::cpu::Transpose;
  exec::cpu::sgemm(Transpose::no, trans_b ? Transpose::yes : Transpose::no, M, N, K, 1.0f, A, K, B, trans_b ? K : N, 0.0f,
                   C, N);
}

}  // namespace orion::bench
