#pragma once
// Matrix-vector products for decoding with MLX's affine 4-bit weights, and their batched form.
// Built like gemv_q8 (gemv.h, gemv_q8.h): the activation is quantised once per call, every
// weight byte is read once, rows go four at a time a quarter of the range apart
// (detail::for_row_groups), chunks of rows go to the pool's threads as they come free
// (detail::for_rows), and the code path is chosen at run time from a table of kernel variants.
//
// q4 numerics. MLX's weight is w = s_g * q + b_g, q in 0..15, so a row's product is
//   y = sum over groups g of  s_g * dot(q_g, x_g) + b_g * sum(x_g),
// and that is what every path computes, bit for bit the same:
//
//  * the activation (q4_activation.h) is quantised once per call to 15-bit integers, per block
//    of 32 columns: n = round(x / u) in [-16256, 16256] with u = absmax / 16256, written as two
//    int8 digits n = 128 * hi + lo (hi in [-127, 127], lo in [-64, 63]); and each group of the
//    weights gets the f32 sum of its x (unquantised), X_k;
//  * lane g (8 consecutive columns) has the integer dot product L_g = sum of q * n over its
//    columns, exact in int32 (|L_g| < 2^21): VNNI's vpdpbusd takes q as its unsigned bytes and
//    a digit as the signed ones, four columns a lane, and L = 128 * (q . hi) + (q . lo); AVX2
//    and AVX-512BW form the same sums with vpmaddubsw and vpmaddwd, arm64 with SDOT or
//    widening multiplies;
//  * each row keeps 16 f32 accumulators A, zero at first. Lane g goes to A[g % 16], in order of
//    g: A[g % 16] = fma(float(L_g) * u_g, s_g, A[g % 16]) (s_g: the row's scale of lane g's
//    group, u_g: the unit of its block). Then group k goes to A[k % 16], in order of k:
//    A[k % 16] = fma(b_k, X_k, A[k % 16]) (b_k: the row's bias of group k). The biases go
//    once a group rather than once a lane: two fewer operations for each 128 columns of a row;
//  * the row's sum is gemv_q8's tree over the 16 accumulators (gemv.h), plus the bias.
//
// Bound. Against the exact product with the weights s * q + b (fp64, nothing rounded), the
// activation's quantisation contributes at most sum over the row of |s_g q_c| * u_c / 2 (u_c the
// unit of column c's block, 1/16256 of the block's largest |x|), the f32 arithmetic a few ulps of
// the terms' magnitudes. tests/exec/gemv_q4_test.cpp holds every kernel to that bound (with
// 1e-5 of the magnitudes for the arithmetic) and to 5e-4 normwise, on x with outliers; what
// it comes to on random weights, and why not 8-bit activations as gemv_q8 (whose error there
// was far above the 1e-3 asked of q4: q is unsigned, so s * q carries the weight's whole
// offset), is in docs/PERFORMANCE.md, "Choices": q4's 15-bit activations.
//
// None of y's elements may overlap W, x or bias.
#include <cstdint>
#include <span>
#include <string_view>

#include "exec/cpu/gemv.h"
#include "exec/cpu/q4_activation.h"

namespace orion::exec::cpu {

// MLX's affine 4-bit weights: row r, group g (columns [g*group, (g+1)*group)) dequantises as
// w[r, c] = scale_bias[2*(r*ng + g)] * q[r, c] + scale_bias[2*(r*ng + g) + 1], q in 0..15, ng = cols/group.
// q is packed two to a byte, MLX's uint32 words read as little-endian bytes: byte k of a row holds
// column 2k in its low nibble and column 2k+1 in its high nibble. group is 32, 64 or 128; cols % group == 0.
struct Q4Weights {
  const std::uint8_t* q;    // [rows, cols / 2]
  const float* scale_bias;  // [rows, cols / group, 2]: (scale, bias) pairs
  std::int64_t rows, cols;
  int group;
};

// y[r] ~= sum over c of w[r, c] x[c] (+ bias[r]), with x quantised as stated above (x must be
// finite). `act` is applied to each output after the bias, by the thread that computed it.
// cols == 0 gives y = act(bias) (or act(0)). Throws orion::Error for a group other than 32, 64
// or 128, odd cols, cols % group != 0, negative sizes or an `isa` this CPU cannot run.
// Allocates only the first time (per calling thread) a row is longer than any before.
void gemv_q4(const Q4Weights& W, const float* x, const float* bias, float* y, ThreadPool& pool,
             Isa isa = best_isa(), Activation act = Activation::none);

// n vectors at once (X: n rows of cols floats; Y: n rows of `rows` floats), each Y_j bit-identical to
// gemv_q4(W, X_j) — the server batches decode steps and relies on a sequence's result not depending on its
// companions; W is streamed from memory once per call (gemv_columns.h: row blocks that stay in L2 while every
// vector passes, up to kColumnVectors vectors against each row in one pass on AVX-512, AVX2 and NEON).
void gemv_q4_columns(const Q4Weights& W, const float* X, const float* bias, float* Y, std::int64_t n,
                     ThreadPool& pool, Isa isa = best_isa(), Activation act = Activation::none);

// The reference the tests and the engine's row() use: row r as floats, each fma(s, q, b) (the
// exact s * q + b rounded once to f32). Throws orion::Error as gemv_q4 does for a bad shape, and
// for r outside [0, rows).
void dequantize_q4_row(const Q4Weights& W, std::int64_t r, float* out);

namespace detail {

// Rows [r0, r1) of the product with the quantised activation, on the calling thread.
using Q4Rows = void (*)(const Q4Weights& W, const Q4Activation& x, const float* bias, float* y,
                        std::int64_t r0, std::int64_t r1);

// The q4 kernel variants, as gemv_q8's (gemv_q8.h): the avx512 request takes AVX-512 VNNI,
// else AVX-512BW; avx2 takes AVX-VNNI, else AVX2; neon takes SDOT where the core has it, else
// plain NEON. All give the scalar kernel's bits.
// Rows [r0, r1) of n <= kColumnVectors vectors' products at once (x[v], y[v]: vector v's
// activation and output), each y[v] bit for bit what Q4Rows gives for x[v] alone: one pass over
// the rows serves the n vectors, the nibbles and scales of each row unpacked once for all of them.
using Q4Vectors = void (*)(const Q4Weights& W, const Q4Activation* const* x, int n, const float* bias,
                           float* const* y, std::int64_t r0, std::int64_t r1);

struct Q4Kernel {
  std::string_view name;  // "avx512-vnni", "avx512-vnni-no-prefetch", "avx512bw", "avx-vnni", "avx2",
                          // "avx2-no-prefetch", "neon-dotprod", "neon", "scalar"
  Isa isa;                // the Isa whose request may pick it
  bool (*supported)();    // whether this CPU (and build) can run it
  Q4Rows rows;
  Q4Vectors vectors;      // null in the scalar and no-prefetch variants: the batched form runs `rows` per vector
};

// Every variant this build has, best first within each Isa; the scalar one last.
std::span<const Q4Kernel> q4_kernels();

// The whole product with one variant: what gemv_q4 does after choosing it (tests and the bench
// run each).
void gemv_q4_with(const Q4Kernel& k, const Q4Weights& W, const float* x, const float* bias, float* y,
                  ThreadPool& pool, Activation act);
void gemv_q4_columns_with(const Q4Kernel& k, const Q4Weights& W, const float* X, const float* bias, float* Y,
                          std::int64_t n, ThreadPool& pool, Activation act);

// How far ahead (in bytes of a row's weights) the AVX-512 and the 256-bit q4 kernels prefetch:
// without it they streamed well below the read bandwidth on the Xeon measured, and the sweep
// behind these distances is in docs/PERFORMANCE.md, "Choices" (q4's prefetch). The 256-bit
// kernels keep q8's distance, which was chosen on Zen 3 (kAvx2PrefetchBytes).
inline constexpr int kQ4Avx512PrefetchBytes = 1024;

// The prefetch of the x86 bodies for the 64-byte line of a row's weights starting at byte `at`:
// the row's bytes P ahead, and its (scale, bias) pairs as far ahead (16 / G bytes of pairs a
// byte of weights), once a line of pairs.
template <int G, int P>
inline void q4_prefetch(const std::uint8_t* row, const float* row_pairs, std::int64_t at) {
  __builtin_prefetch(row + P, 0, 3);
  if (at / 64 % (G / 16) == 0) __builtin_prefetch(reinterpret_cast<const char*>(row_pairs) + (at + P) * 16 / G, 0, 3);
}

#if defined(__x86_64__)
void q4_rows_avx512_vnni(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
// The two kernels without software prefetching: never chosen, kept so that bench_decode_matrices
// can measure what the prefetch is worth on the CPU at hand.
void q4_rows_avx512_vnni_no_prefetch(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t,
                                     std::int64_t);
void q4_rows_avx512bw(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
void q4_vectors_avx512_vnni(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*, std::int64_t,
                            std::int64_t);
void q4_vectors_avx512bw(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*, std::int64_t,
                         std::int64_t);
void q4_rows_avx_vnni(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
void q4_rows_avx2(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
void q4_rows_avx2_no_prefetch(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t,
                              std::int64_t);
void q4_vectors_avx_vnni(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*, std::int64_t,
                         std::int64_t);
void q4_vectors_avx2(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*, std::int64_t,
                     std::int64_t);
#endif
#if defined(__aarch64__)
void q4_rows_neon_dotprod(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
void q4_rows_neon(const Q4Weights&, const Q4Activation&, const float*, float*, std::int64_t, std::int64_t);
void q4_vectors_neon_dotprod(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*,
                             std::int64_t, std::int64_t);
void q4_vectors_neon(const Q4Weights&, const Q4Activation* const*, int, const float*, float* const*, std::int64_t,
                     std::int64_t);
#endif

}  // namespace detail

}  // namespace orion::exec::cpu
