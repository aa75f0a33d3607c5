// gemv_q8 and gemv_q8_columns: argument checks, the activation's quantisation, the choice of
// kernel variant, the batched form's passes, and the portable scalar kernel that defines the
// numerics (gemv.h) the SIMD variants reproduce.
#include <cmath>
#include <string>

#include "core/cpu_features.h"
#include "core/error.h"
#include "exec/cpu/gemv_columns.h"
#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu {

namespace detail {

namespace {

// One row at a time: the scalar path is for portability and for the tests, not for speed.
void q8_rows_scalar(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                    float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = W.cols / W.block, lanes = W.cols / kQ8LaneColumns;
  const std::int8_t* xq = x.q.data();
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int8_t* q = W.q + r * W.cols;
    const float* ws = W.scales + r * nb;
    float acc[16] = {};
    for (std::int64_t g = 0; g < lanes; ++g) {
      const std::int64_t c = g * kQ8LaneColumns;
      std::int32_t dot = 0;
      for (int i = 0; i < kQ8LaneColumns; ++i) dot += q[c + i] * xq[c + i];
      const float t = static_cast<float>(dot) * x.lane_scale[static_cast<std::size_t>(g)];
      acc[g % 16] = std::fma(t, ws[c / W.block], acc[g % 16]);
    }
    const float s = reduce_q8_lanes(acc);
    y[r] = bias ? s + bias[r] : s;
  }
}

bool always() { return true; }

#if defined(__x86_64__)
bool has_avx512_vnni() { return isa_supported(Isa::avx512) && cpu_features().avx512vnni; }
bool has_avx512bw() { return isa_supported(Isa::avx512); }
bool has_avx_vnni() { return isa_supported(Isa::avx2) && cpu_features().avxvnni; }
bool has_avx2() { return isa_supported(Isa::avx2); }
#endif
#if defined(__aarch64__)
bool has_neon_dotprod() { return isa_supported(Isa::neon) && cpu_features().dotprod; }
bool has_neon() { return isa_supported(Isa::neon); }
#endif

const Q8Kernel kKernels[] = {
#if defined(__x86_64__)
    {"avx512-vnni", Isa::avx512, has_avx512_vnni, q8_rows_avx512_vnni, q8_vectors_avx512_vnni},
    {"avx512bw", Isa::avx512, has_avx512bw, q8_rows_avx512bw, q8_vectors_avx512bw},
    {"avx-vnni", Isa::avx2, has_avx_vnni, q8_rows_avx_vnni, q8_vectors_avx_vnni},
    {"avx2", Isa::avx2, has_avx2, q8_rows_avx2, q8_vectors_avx2},
    {"avx2-no-prefetch", Isa::avx2, has_avx2, q8_rows_avx2_no_prefetch, nullptr},
#endif
#if defined(__aarch64__)
    {"neon-dotprod", Isa::neon, has_neon_dotprod, q8_rows_neon_dotprod, q8_vectors_neon_dotprod},
    {"neon", Isa::neon, has_neon, q8_rows_neon, q8_vectors_neon},
#endif
    {"scalar", Isa::scalar, always, q8_rows_scalar, nullptr},
};

const Q8Kernel& kernel_for(Isa isa, const char* what) {
  check_isa(isa, what);
  for (const Q8Kernel& k : kKernels)
    if (k.isa == isa && k.supported()) return k;
  throw Error(std::string(what) + ": no kernel for the " + std::string(isa_name(isa)) + " path");
}

void check_q8_kernel(const char* what, const Q8Kernel& k, const Q8Weights& W) {
  check_sizes(what, W.rows, W.cols);
  if (W.block != 32 && W.block != 64)
    throw Error(std::string(what) + ": block " + std::to_string(W.block) + " (must be 32 or 64)");
  if (W.cols % W.block != 0)
    throw Error(std::string(what) + ": cols " + std::to_string(W.cols) + " is not a multiple of the block " +
                std::to_string(W.block));
  if (!k.supported())
    throw Error(std::string(what) + ": this CPU cannot run the " + std::string(k.name) + " kernel");
}

}  // namespace

std::span<const Q8Kernel> q8_kernels() { return kKernels; }

void gemv_q8_with(const Q8Kernel& k, const Q8Weights& W, const float* x, const float* bias,
                  float* y, ThreadPool& pool, Activation act) {
  check_q8_kernel("gemv_q8", k, W);
  if (W.cols == 0) return fill_bias(bias, y, W.rows, act);
  // Once per product, on the calling thread; the pool's threads only read it. (Through a
  // pointer: a lambda names a thread_local directly, which on a worker is the worker's own.)
  thread_local QuantizedActivation scratch;
  const QuantizedActivation* qx = &scratch;
  quantize_activation(x, W.cols, W.block, scratch);
  for_rows(W.rows, W.cols, y, pool, [&](std::int64_t r0, std::int64_t r1) {
    k.rows(W, *qx, bias, y, r0, r1);
    apply_activation(act, y + r0, r1 - r0);
  });
}

void gemv_q8_columns_with(const Q8Kernel& k, const Q8Weights& W, const float* X, const float* bias, float* Y,
                          std::int64_t n, ThreadPool& pool, Activation act) {
  check_q8_kernel("gemv_q8_columns", k, W);
  if (n < 0) throw Error("gemv_q8_columns: " + std::to_string(n) + " vectors");
  // Rows of weights and scales, read once a call.
  const std::int64_t row_bytes = W.cols + static_cast<std::int64_t>(sizeof(float)) * (W.cols / W.block);
  quantised_columns<QuantizedActivation>(k, W, row_bytes, X, bias, Y, n, pool, act, [&](const float* xj, QuantizedActivation& out) {
    quantize_activation(xj, W.cols, W.block, out);
  });
}

}  // namespace detail

void gemv_q8(const Q8Weights& W, const float* x, const float* bias, float* y, ThreadPool& pool,
             Isa isa, Activation act) {
  detail::gemv_q8_with(detail::kernel_for(isa, "gemv_q8"), W, x, bias, y, pool, act);
}

void gemv_q8_columns(const Q8Weights& W, const float* X, const float* bias, float* Y, std::int64_t n,
                     ThreadPool& pool, Isa isa, Activation act) {
  detail::gemv_q8_columns_with(detail::kernel_for(isa, "gemv_q8_columns"), W, X, bias, Y, n, pool, act);
}

}  // namespace orion::exec::cpu
