#pragma once
// Matrix-vector products for decoding one token: y = W x (+ bias) with W row-major
// [rows, cols] in f32, IEEE f16 or block-quantised int8, x and y in f32. Decoding streams every
// weight once per token, so these kernels are built to run at the machine's memory bandwidth
// (machine_limits.h has the probe that measures it):
//
//  * every weight byte is read exactly once per call; rows go four at a time, so that each load
//    of x serves four rows, with several independent f32 accumulators per row, and the four
//    rows of a group lie a quarter of the thread's range apart, so that memory sees four long
//    sequential streams (detail::for_row_groups);
//  * one parallel_for per call splits the rows over the pool in chunks that start on a
//    64-byte boundary of y (16 floats), so no two threads ever write the same cache line of y;
//    problems below kInlineElements weights run on the calling thread;
//  * the code path is chosen at run time (best_isa()); the scalar path is portable C++ and is
//    tested like the others.
//
// Numerics: f32 accumulation everywhere. The arithmetic done for a row depends only on the
// ISA, cols and W's address modulo 64 (which sets how many columns are peeled off to align
// the loads), never on the row's position, the chunking or the number of threads: a given ISA
// gives the same y bit for bit on any pool. Different ISAs differ in the order of the
// additions (within 1e-5 normwise of an fp64 product in the tests).
//
// q8 numerics (gemv_q8): int8 x int8 dot products with exact int32 sums. x is quantised once
// per call, per block of the weights' block size (q8_activation.h: scale xs_b, int8 xq), and
// every path computes the same function, bit for bit:
//
//  * a "lane" is 4 consecutive columns g = c / 4; its dot product L_g = sum of q * xq over
//    its 4 columns is an exact int32 (what one lane of vpdpbusd, or of arm64's SDOT, sums);
//  * each row keeps 16 f32 accumulators, lane g going to A[g % 16] (the 16 lanes of one
//    512-bit register): A[g % 16] = fma(float(L_g) * xs_b, ws_b, A[g % 16]), where b is the
//    block of lane g, ws_b the row's weight scale and xs_b the activation's, in order of g;
//  * the row's sum is the tree (A[i] + A[i + 8]), then i + 4, i + 2, i + 1, plus the bias.
//
// So the paths (scalar, AVX2, AVX-VNNI, AVX-512BW, AVX-512 VNNI, NEON with and without SDOT)
// differ only in speed, and the tests hold them to the scalar path bit for bit. Against the
// product with unquantised x the result carries the activation's quantisation error (at most
// xs_b / 2 per element; in the logits of GPT-2 124M it is reported by `orion bench decode
// --dtype q8`). Quantising x was chosen over converting int8 weights to f32 because that
// conversion capped the kernel below the memory bandwidth (docs/PERFORMANCE.md, "Choices": q8
// as int8 x int8). Weights must lie in [-127, 127], as quantize_q8 writes them: -128 gives
// ISA-dependent results.
//
// None of y's elements may overlap W, x, bias or (for q8) the scales.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <type_traits>

#include "core/thread_pool.h"
#include "exec/cpu/activation.h"

namespace orion::exec::cpu {

// x86-64: avx2, avx512. AArch64: neon, the Advanced SIMD every arm64 core has (FMA and fp16
// conversion included; the q8 kernels also use the dot-product instructions where the core has
// them, gemv_q8.h). Each exists only in a build for its architecture (docs/PLATFORMS.md).
enum class Isa { scalar, avx2, avx512, neon };

// The best path this CPU supports, detected once: avx512 needs AVX-512 F/BW/VL with FMA and
// F16C, avx2 needs AVX2 with FMA and F16C, neon an arm64 build; scalar runs everywhere.
Isa best_isa();
// Whether this CPU (and this build: each SIMD path exists for its own architecture) can run `isa`.
bool isa_supported(Isa isa);
std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512", "neon"

// Problems with fewer weights than this run on the calling thread: waking the pool costs more
// than streaming them.
inline constexpr std::int64_t kInlineElements = 32 * 1024;

// y[r] = dot(W[r, :], x) (+ bias[r] when bias != nullptr) for r in [0, rows); W row-major
// [rows, cols], any alignment. cols == 0 gives y = bias (or 0). Throws orion::Error for
// negative sizes or an `isa` this CPU cannot run. `act` is applied to each output after the
// bias, by the thread that computed it, while its line of y is still in L1 (no extra pass or
// synchronisation).
void gemv_f32(const float* W, const float* x, const float* bias, float* y, std::int64_t rows,
              std::int64_t cols, ThreadPool& pool, Isa isa = best_isa(),
              Activation act = Activation::none);

// As gemv_f32 with W in IEEE binary16 (bit patterns), converted exactly to f32 in registers.
void gemv_f16(const std::uint16_t* W, const float* x, const float* bias, float* y,
              std::int64_t rows, std::int64_t cols, ThreadPool& pool, Isa isa = best_isa(),
              Activation act = Activation::none);

// y_j = W x_j for n vectors at once: X holds x_0 .. x_{n-1} as rows of `cols` floats, Y gets
// y_0 .. y_{n-1} as rows of `rows` floats. Every y_j is gemv_f32(W, x_j, nullptr, y_j) bit for
// bit (the same arithmetic for each row on the same W; the arithmetic of a row never depends on
// the other vectors, on n or on the pool), so a vector's product is the same whether it comes
// alone or with others: ane-sim's pointwise convs and a server's batched decode rely on it
// (exec/cpu/kernels/conv.cpp, engine::FastSession::decode_batch). W is read from memory once a
// call, not n times (gemv_columns.h: the rows go in blocks that stay in L2 while every vector
// passes over them, and the AVX-512, AVX2 and NEON kernels take up to kColumnVectors vectors
// against each row in one pass). None of Y may overlap W or X.
// `done(r0, r1)`, when given, runs once rows [r0, r1) of every Y_j are computed, on the thread
// that computed them (the rows of different calls do not overlap): the place for a bias or an
// activation while those rows are still in cache, and spread over the pool.
void gemv_f32_columns(const float* W, const float* X, float* Y, std::int64_t rows, std::int64_t cols,
                      std::int64_t n, ThreadPool& pool, Isa isa = best_isa(),
                      const std::function<void(std::int64_t r0, std::int64_t r1)>& done = {});

// The same with W in IEEE binary16, a bias and an activation: every Y_j is gemv_f16(W, X_j, bias,
// Y_j, act) bit for bit, W read from memory once a call. cols == 0 gives every Y_j = act(bias).
void gemv_f16_columns(const std::uint16_t* W, const float* X, const float* bias, float* Y, std::int64_t rows,
                      std::int64_t cols, std::int64_t n, ThreadPool& pool, Isa isa = best_isa(),
                      Activation act = Activation::none);

// 8-bit weights: row r, block b (weights [b*block, (b+1)*block) of the row) is
// scales[r * (cols / block) + b] * q[r * cols + c]; see quantize.h. block is 32 or 64 and
// cols % block == 0.
struct Q8Weights {
  const std::int8_t* q;  // [rows, cols]
  const float* scales;   // [rows, cols / block]
  std::int64_t rows, cols;
  int block;
};

// y[r] ~= sum_b scales[r, b] * dot(q[r, block b], x[block b]) (+ bias[r]), with x quantised
// (see the q8 numerics above; x must be finite). Throws orion::Error for a bad block,
// cols % block != 0, negative sizes or an `isa` this CPU cannot run. Allocates only the first
// time (per calling thread) a row is longer than any before.
void gemv_q8(const Q8Weights& W, const float* x, const float* bias, float* y, ThreadPool& pool,
             Isa isa = best_isa(), Activation act = Activation::none);

// n vectors at once (X: n rows of W.cols floats; Y: n rows of W.rows floats), every Y_j
// gemv_q8(W, X_j, bias, Y_j, act) bit for bit, each X_j quantised once, W read from memory once a
// call (as gemv_f32_columns).
void gemv_q8_columns(const Q8Weights& W, const float* X, const float* bias, float* Y, std::int64_t n,
                     ThreadPool& pool, Isa isa = best_isa(), Activation act = Activation::none);

namespace detail {

// How many vectors the batched kernels take against each row in one pass (gemv_columns.h).
inline constexpr int kColumnVectors = 4;

// f(std::integral_constant<int, n>{}): a pass's number of vectors, n in [1, kColumnVectors], as
// the template argument the batched kernels are instantiated for.
template <class F>
inline void with_vector_count(int n, const F& f) {
  static_assert(kColumnVectors == 4);
  switch (n) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    default:
      return f(std::integral_constant<int, 4>{});
  }
}

// Rows [r0, r1) of n <= kColumnVectors vectors' products at once (x[v], y[v]: vector v's input
// and output), each y[v] bit for bit what the row kernel of the same ISA gives for x[v] alone,
// bias included: one pass over the rows serves the n vectors.
template <class Weight>
using DenseVectors = void (*)(const Weight* W, const float* const* x, int n, const float* bias, float* const* y,
                              std::int64_t r0, std::int64_t r1, std::int64_t cols);

// The per-ISA row kernels behind gemv_f32 and gemv_f16 (gemv_q8's are in gemv_q8.h): rows
// [r0, r1) of the product, on the calling thread, and their batched forms (null where the ISA
// has none: the batched product then runs the row kernel once per vector). Defined in gemv.cpp
// (scalar), gemv_avx2.cpp and gemv_avx512.cpp (x86-64 only), gemv_neon.cpp (arm64 only); callers
// must have checked isa_supported().
struct RowKernels {
  void (*f32)(const float* W, const float* x, const float* bias, float* y, std::int64_t r0,
              std::int64_t r1, std::int64_t cols);
  void (*f16)(const std::uint16_t* W, const float* x, const float* bias, float* y,
              std::int64_t r0, std::int64_t r1, std::int64_t cols);
  DenseVectors<float> f32_vectors;
  DenseVectors<std::uint16_t> f16_vectors;
};

extern const RowKernels kScalarKernels;
#if defined(__x86_64__)
extern const RowKernels kAvx2Kernels;
// kAvx2Kernels without their software prefetching (the same arithmetic): never chosen, kept so
// that bench_decode_matrices can measure what the prefetch is worth on the CPU at hand.
extern const RowKernels kAvx2KernelsWithoutPrefetch;
// How far ahead the AVX2 f16 and q8 kernels prefetch each row's weights (f32 does not: it lost).
// The q8 and f16 bodies run several times the instructions per byte of f32's, which leaves
// fewer loads in flight; prefetching 256-512 bytes ahead raised them and 1024 lost
// (bench_decode_matrices; the figures are in docs/PERFORMANCE.md, "Choices").
inline constexpr int kAvx2PrefetchBytes = 384;
extern const RowKernels kAvx512Kernels;
#endif
#if defined(__aarch64__)
extern const RowKernels kNeonKernels;
#endif

// Throws orion::Error when `isa` cannot run here; `what` names the caller.
void check_isa(Isa isa, const char* what);
// The kernels of `isa`, after check_isa.
const RowKernels& row_kernels(Isa isa, const char* what);
void check_sizes(const char* what, std::int64_t rows, std::int64_t cols);

// Runs fn(r0, r1) over [0, rows): inline for small problems (rows * cols < kInlineElements),
// else one parallel_for whose chunks start where y + r0 is 64-byte aligned, so each thread
// writes whole cache lines of y.
void for_rows(std::int64_t rows, std::int64_t cols, const float* y, ThreadPool& pool,
              const std::function<void(std::int64_t r0, std::int64_t r1)>& fn);

// y = act(bias), or act(0) without one: the product with no columns.
void fill_bias(const float* bias, float* y, std::int64_t rows, Activation act);

// for_row_groups for V vectors and groups of R rows: rows [r0, r1) in groups of R rows (r1 - r0) / R
// apart, then the rest one at a time; group(row, stride, out) computes the R rows row + k*stride
// for every vector into out[k * V + v], one(row, out) row `row` into out[v]; y[v][r] gets vector
// v's sum of row r plus bias[r] (when bias != nullptr).
template <int R, int V, class One, class Group>
inline void for_vector_rows(std::int64_t r0, std::int64_t r1, const float* bias, float* const* y, const One& one,
                            const Group& group) {
  float s[R * V];
  const std::int64_t q = (r1 - r0) / R;
  for (std::int64_t i = 0; i < q; ++i) {
    group(r0 + i, q, s);
    for (std::int64_t k = 0; k < R; ++k) {
      const std::int64_t r = r0 + i + k * q;
      for (int v = 0; v < V; ++v) y[v][r] = bias ? s[k * V + v] + bias[r] : s[k * V + v];
    }
  }
  for (std::int64_t r = r0 + R * q; r < r1; ++r) {
    one(r, s);
    for (int v = 0; v < V; ++v) y[v][r] = bias ? s[v] + bias[r] : s[v];
  }
}

// The row order every kernel uses, so that memory sees long sequential streams: rows [r0, r1)
// go in groups of four rows a quarter of the range apart (rows r0 + i + k*q, k = 0..3, with
// q = (r1 - r0) / 4), which makes four sequential streams through W, then the last
// (r1 - r0) % 4 rows one at a time. Four adjacent rows instead are four short streams of one
// row each (768 bytes for a q8 row of GPT-2), which the hardware prefetchers follow badly
// (docs/PERFORMANCE.md, "Smaller measurements behind the code"; software prefetching added
// nothing on top on the AVX-512 machine measured, and helps the AVX2 f16 and q8 kernels on
// an AVX2-only one: kAvx2PrefetchBytes).
// group4(row, stride, sums) computes the four sums of rows row + k*stride; group1(row, sums)
// one row's. The arithmetic for a row must not depend on which of the two computes it.
template <class Group1, class Group4>
inline void for_row_groups(std::int64_t r0, std::int64_t r1, const float* bias, float* y,
                           const Group1& group1, const Group4& group4) {
  float* const ys[1] = {y};
  for_vector_rows<4, 1>(r0, r1, bias, ys, group1, group4);
}

// How many leading columns to peel off (with a masked load) so that the vector loads of every
// row start on an `align`-byte boundary, where the loads are `align` bytes wide: a load that
// straddles two cache lines costs two (docs/PERFORMANCE.md, "Smaller measurements behind the
// code"). All rows
// share W's alignment only when a row is a whole number of `align` bytes; otherwise nothing is
// peeled. The result depends only on W's address and cols, so every row of a call gets the
// same arithmetic.
template <class Weight>
std::int64_t aligning_head(const Weight* W, std::int64_t cols, std::size_t align) {
  const auto addr = reinterpret_cast<std::uintptr_t>(W);
  if ((static_cast<std::size_t>(cols) * sizeof(Weight)) % align != 0 || addr % sizeof(Weight) != 0)
    return 0;
  const auto head = static_cast<std::int64_t>(((align - addr % align) % align) / sizeof(Weight));
  return head < cols ? head : 0;
}

}  // namespace detail

}  // namespace orion::exec::cpu
