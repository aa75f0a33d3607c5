#pragma once
// The q8 GEMV's kernel variants (internal to exec/cpu and its tests). gemv_q8 (gemv.h) picks
// the best one this CPU runs for the requested Isa: avx512 -> AVX-512 VNNI, else AVX-512BW;
// avx2 -> AVX-VNNI, else AVX2; neon -> NEON with SDOT where the core has FEAT_DotProd, else
// plain NEON. All compute the numerics stated in gemv.h bit for bit; they differ only in how
// they form the exact int32 lane sums:
//
//  * VNNI (512-bit): vpdpbusd multiplies unsigned by signed bytes, so the weights go in as
//    q ^ 0x80 = q + 128 (unsigned) and each lane's accumulator starts at -128 * sum(xq), which
//    the activation carries precomputed (QuantizedActivation::lane_offset): exact.
//  * AVX-512BW, AVX2 and AVX-VNNI (256-bit): |xq| as the unsigned operand and q with xq's sign
//    as the signed one; pairs of products stay within int16 (2 * 127 * 127 < 32768), so
//    vpmaddubsw does not saturate and the sums are exact too.
//  * NEON with SDOT (arm64): signed by signed bytes, each int32 lane the sum of 4 consecutive
//    products, exactly gemv.h's lane.
//  * NEON without it: vmull_s8 into int16, pairs added in int16 (2 * 127 * 127 < 32768, as
//    for vpmaddubsw), then pairs of pairs widened to int32: exact.
#include <span>
#include <string_view>

#include "exec/cpu/gemv.h"
#include "exec/cpu/q8_activation.h"

namespace orion::exec::cpu::detail {

// Rows [r0, r1) of the product with the quantised activation, on the calling thread.
using Q8Rows = void (*)(const Q8Weights& W, const QuantizedActivation& x, const float* bias,
                        float* y, std::int64_t r0, std::int64_t r1);
// Rows [r0, r1) of n <= kColumnVectors vectors' products at once (x[v], y[v]: vector v's
// activation and output), each y[v] bit for bit what Q8Rows gives for x[v] alone: one pass over
// the rows serves the n vectors, each row's weights and scales loaded once for all of them.
using Q8Vectors = void (*)(const Q8Weights& W, const QuantizedActivation* const* x, int n, const float* bias,
                           float* const* y, std::int64_t r0, std::int64_t r1);

struct Q8Kernel {
  std::string_view name;  // "scalar", "avx2", "avx2-no-prefetch", "avx-vnni", "avx512bw",
                          // "avx512-vnni", "neon", "neon-dotprod"
  Isa isa;                // the Isa whose request may pick it
  bool (*supported)();    // whether this CPU (and build) can run it
  Q8Rows rows;
  Q8Vectors vectors;      // null in the scalar and no-prefetch variants: the batched form runs `rows` per vector
};

// Every variant this build has, best first within each Isa.
std::span<const Q8Kernel> q8_kernels();

// The whole product with one variant: what gemv_q8 does after choosing it (tests run each).
void gemv_q8_with(const Q8Kernel& k, const Q8Weights& W, const float* x, const float* bias,
                  float* y, ThreadPool& pool, Activation act);
void gemv_q8_columns_with(const Q8Kernel& k, const Q8Weights& W, const float* X, const float* bias, float* Y,
                          std::int64_t n, ThreadPool& pool, Activation act);

// The row's final sum of the 16 lane accumulators, in the order gemv.h states.
inline float reduce_q8_lanes(const float* a) {
  float v8[8], v4[4];
  for (int i = 0; i < 8; ++i) v8[i] = a[i] + a[i + 8];
  for (int i = 0; i < 4; ++i) v4[i] = v8[i] + v8[i + 4];
  return (v4[0] + v4[2]) + (v4[1] + v4[3]);
}

#if defined(__x86_64__)
void q8_rows_avx512_vnni(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                         std::int64_t, std::int64_t);
void q8_rows_avx512bw(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                      std::int64_t, std::int64_t);
void q8_rows_avx_vnni(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                      std::int64_t, std::int64_t);
void q8_rows_avx2(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                  std::int64_t, std::int64_t);
// The same without software prefetching: never chosen, kept so that bench_decode_matrices can
// measure what the prefetch is worth on the CPU at hand (and the tests hold it to the same bits).
void q8_rows_avx2_no_prefetch(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                              std::int64_t, std::int64_t);
void q8_vectors_avx512_vnni(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                            std::int64_t, std::int64_t);
void q8_vectors_avx512bw(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                         std::int64_t, std::int64_t);
void q8_vectors_avx_vnni(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                         std::int64_t, std::int64_t);
void q8_vectors_avx2(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                     std::int64_t, std::int64_t);
#endif
#if defined(__aarch64__)
// neon_dotprod needs FEAT_DotProd (cpu_features().dotprod); neon runs on every arm64 core.
void q8_rows_neon_dotprod(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                          std::int64_t, std::int64_t);
void q8_rows_neon(const Q8Weights&, const QuantizedActivation&, const float*, float*,
                  std::int64_t, std::int64_t);
void q8_vectors_neon_dotprod(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                             std::int64_t, std::int64_t);
void q8_vectors_neon(const Q8Weights&, const QuantizedActivation* const*, int, const float*, float* const*,
                     std::int64_t, std::int64_t);
#endif

}  // namespace orion::exec::cpu::detail
