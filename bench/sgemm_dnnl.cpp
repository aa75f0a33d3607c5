#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <stdexcept>

#include "sgemm_backend.h"

namespace orion::bench {

namespace {

std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    default: return "dnnl_cpu_isa_t " + std::to_string(static_cast<int>(isa));
  }
}

}  // namespace

std::string sgemm_library() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         " (OpenMP), isa " + isa_name(dnnl_get_effective_cpu_isa());
}

std::string sgemm_origin() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&dnnl_sgemm), &info) && info.dli_fname ? info.dli_fname : "?";
}

// Debian's oneDNN is built on OpenMP: its thread count is OpenMP's.
void sgemm_set_threads(int threads) { omp_set_num_threads(threads); }

// dnnl_sgemm is row-major already.
void sgemm_run(bool trans_b, int M, int N, int K, const float* A, const float* B, float* C) {
  if (dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, 1.0f, A, K, B, trans_b ? K : N, 0.0f, C, N) != dnnl_success)
    throw std::runtime_error("dnnl_sgemm failed");
}

}  // namespace orion::bench
