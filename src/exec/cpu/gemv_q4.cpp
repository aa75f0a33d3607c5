// gemv_q4: argument checks, the activation's quantisation, the choice of kernel variant, the
// passes and row blocks of the batched form, and the portable scalar kernel that defines the numerics
// (gemv_q4.h) the SIMD variants reproduce.
#include "exec/cpu/gemv_q4.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/cpu_features.h"
#include "core/error.h"
#include "exec/cpu/gemv_columns.h"
#include "exec/cpu/gemv_q8.h"

namespace orion::exec::cpu {

namespace detail {

namespace {

// One row at a time, one column at a time: the scalar path is for portability and for the
// tests, not for speed.
void q4_rows_scalar(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y, std::int64_t r0,
                    std::int64_t r1) {
  const std::int64_t ng = W.cols / W.group, lanes = W.cols / kQ4LaneColumns;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::uint8_t* q = W.q + r * (W.cols / 2);
    const float* sb = W.scale_bias + r * 2 * ng;
    float acc[16] = {};
    for (std::int64_t g = 0; g < lanes; ++g) {
      std::int32_t dot = 0;
      for (std::int64_t c = g * kQ4LaneColumns; c < (g + 1) * kQ4LaneColumns; ++c)
        dot += ((q[c / 2] >> (4 * (c % 2))) & 0x0f) * x.value(c);
      const float t = static_cast<float>(dot) * x.lane_unit[static_cast<std::size_t>(g)];
      acc[g % 16] = std::fma(t, sb[2 * (g * kQ4LaneColumns / W.group)], acc[g % 16]);
    }
    for (std::int64_t k = 0; k < ng; ++k) acc[k % 16] = std::fma(sb[2 * k + 1], x.group_sum[static_cast<std::size_t>(k)], acc[k % 16]);
    const float s = reduce_q8_lanes(acc);
    y[r] = bias ? s + bias[r] : s;
  }
}

bool q4_always() { return true; }

#if defined(__x86_64__)
bool q4_has_avx512_vnni() { return isa_supported(Isa::avx512) && cpu_features().avx512vnni; }
bool q4_has_avx512bw() { return isa_supported(Isa::avx512); }
bool q4_has_avx_vnni() { return isa_supported(Isa::avx2) && cpu_features().avxvnni; }
bool q4_has_avx2() { return isa_supported(Isa::avx2); }
#endif
#if defined(__aarch64__)
bool q4_has_neon_dotprod() { return isa_supported(Isa::neon) && cpu_features().dotprod; }
bool q4_has_neon() { return isa_supported(Isa::neon); }
#endif

const Q4Kernel kQ4Kernels[] = {
#if defined(__x86_64__)
    {"avx512-vnni", Isa::avx512, q4_has_avx512_vnni, q4_rows_avx512_vnni, q4_vectors_avx512_vnni},
    {"avx512-vnni-no-prefetch", Isa::avx512, q4_has_avx512_vnni, q4_rows_avx512_vnni_no_prefetch, nullptr},
    {"avx512bw", Isa::avx512, q4_has_avx512bw, q4_rows_avx512bw, q4_vectors_avx512bw},
    {"avx-vnni", Isa::avx2, q4_has_avx_vnni, q4_rows_avx_vnni, q4_vectors_avx_vnni},
    {"avx2", Isa::avx2, q4_has_avx2, q4_rows_avx2, q4_vectors_avx2},
    {"avx2-no-prefetch", Isa::avx2, q4_has_avx2, q4_rows_avx2_no_prefetch, nullptr},
#endif
#if defined(__aarch64__)
    {"neon-dotprod", Isa::neon, q4_has_neon_dotprod, q4_rows_neon_dotprod, q4_vectors_neon_dotprod},
    {"neon", Isa::neon, q4_has_neon, q4_rows_neon, q4_vectors_neon},
#endif
    {"scalar", Isa::scalar, q4_always, q4_rows_scalar, nullptr},
};

const Q4Kernel& q4_kernel_for(Isa isa, const char* what) {
  check_isa(isa, what);
  for (const Q4Kernel& k : kQ4Kernels)
    if (k.isa == isa && k.supported()) return k;
  throw Error(std::string(what) + ": no kernel for the " + std::string(isa_name(isa)) + " path");
}

void check_q4(const char* what, const Q4Weights& W) {
  check_sizes(what, W.rows, W.cols);
  if (W.group != 32 && W.group != 64 && W.group != 128)
    throw Error(std::string(what) + ": group " + std::to_string(W.group) + " (must be 32, 64 or 128)");
  if (W.cols % 2 != 0)
    throw Error(std::string(what) + ": cols " + std::to_string(W.cols) + " is odd (4-bit weights come two to a byte)");
  if (W.cols % W.group != 0)
    throw Error(std::string(what) + ": cols " + std::to_string(W.cols) + " is not a multiple of the group " +
                std::to_string(W.group));
}

void check_q4_kernel(const char* what, const Q4Kernel& k, const Q4Weights& W) {
  check_q4(what, W);
  if (!k.supported())
    throw Error(std::string(what) + ": this CPU cannot run the " + std::string(k.name) + " kernel");
}

}  // namespace

std::span<const Q4Kernel> q4_kernels() { return kQ4Kernels; }

void gemv_q4_with(const Q4Kernel& k, const Q4Weights& W, const float* x, const float* bias, float* y,
                  ThreadPool& pool, Activation act) {
  check_q4_kernel("gemv_q4", k, W);
  if (W.cols == 0) return fill_bias(bias, y, W.rows, act);
  // Once per product, on the calling thread; the pool's threads only read it (through a
  // pointer: a lambda that named the thread_local would see a worker's own).
  thread_local Q4Activation scratch;
  const Q4Activation* qx = &scratch;
  quantize_q4_activation(x, W.cols, W.group, scratch);
  for_rows(W.rows, W.cols, y, pool, [&](std::int64_t r0, std::int64_t r1) {
    k.rows(W, *qx, bias, y, r0, r1);
    apply_activation(act, y + r0, r1 - r0);
  });
}

void gemv_q4_columns_with(const Q4Kernel& k, const Q4Weights& W, const float* X, const float* bias, float* Y,
                          std::int64_t n, ThreadPool& pool, Activation act) {
  check_q4_kernel("gemv_q4_columns", k, W);
  if (n < 0) throw Error("gemv_q4_columns: " + std::to_string(n) + " vectors");
  // Rows of weights and scales, read once a call.
  const std::int64_t row_bytes = W.cols / 2 + 2 * static_cast<std::int64_t>(sizeof(float)) * (W.cols / W.group);
  quantised_columns<Q4Activation>(k, W, row_bytes, X, bias, Y, n, pool, act, [&](const float* xj, Q4Activation& out) {
    quantize_q4_activation(xj, W.cols, W.group, out);
  });
}

}  // namespace detail

void gemv_q4(const Q4Weights& W, const float* x, const float* bias, float* y, ThreadPool& pool, Isa isa,
             Activation act) {
  detail::gemv_q4_with(detail::q4_kernel_for(isa, "gemv_q4"), W, x, bias, y, pool, act);
}

void gemv_q4_columns(const Q4Weights& W, const float* X, const float* bias, float* Y, std::int64_t n,
                     ThreadPool& pool, Isa isa, Activation act) {
  detail::gemv_q4_columns_with(detail::q4_kernel_for(isa, "gemv_q4_columns"), W, X, bias, Y, n, pool, act);
}

void dequantize_q4_row(const Q4Weights& W, std::int64_t r, float* out) {
  detail::check_q4("dequantize_q4_row", W);
  if (r < 0 || r >= W.rows)
    throw Error("dequantize_q4_row: row " + std::to_string(r) + " of " + std::to_string(W.rows));
  const std::uint8_t* q = W.q + r * (W.cols / 2);
  const float* sb = W.scale_bias + r * 2 * (W.cols / W.group);
  for (std::int64_t c = 0; c < W.cols; ++c) {
    const float* pair = sb + 2 * (c / W.group);
    out[c] = std::fma(pair[0], static_cast<float>((q[c / 2] >> (4 * (c % 2))) & 0x0f), pair[1]);
  }
}

}  // namespace orion::exec::cpu
