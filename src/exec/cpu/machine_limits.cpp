#include "exec/cpu/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/stopwatch.h"

#if defined(__x86_64__)
#include "exec/cpu/intrinsics.h"
#define ORION_AVX2 __attribute__((target("avx2,fma,f16c")))
#define ORION_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace orion::exec::cpu {

namespace {

// Each thread reads its share as kStreams sequential streams at once (its share cut into
// kStreams equal parts, advanced in lockstep). One stream per core leaves the hardware
// prefetchers short of memory-level parallelism and reads at well under half of what the
// memory delivers (docs/PERFORMANCE.md, "Smaller measurements behind the code"), so a
// one-stream probe would flatter every kernel. The gemv kernels read four streams per thread
// too (gemv.h). Every part is a whole number of kStep bytes: per step each stream gives two
// 64-byte lines, eight lines over the eight accumulators.
constexpr std::size_t kStreams = 4;
constexpr std::size_t kLinesPerStream = 2;
constexpr std::size_t kStep = 64 * kLinesPerStream;
// Pieces of the buffer per thread, handed out as threads come free (measure_read_bandwidth_gbps).
constexpr std::size_t kPiecesPerThread = 32;

// Keeps results alive so that the compiler cannot drop the loops that compute them.
std::atomic<std::uint64_t> g_sink{0};

void consume(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  g_sink.fetch_add(bits, std::memory_order_relaxed);
}

// ---- read bandwidth: sum the kStreams parts of `len` bytes (a multiple of kStep) at p ----

float sum_scalar(const std::byte* p, std::size_t len) {
  // Integer sums of 64-bit words, eight independent chains: no FP latency, and the compiler's
  // baseline vectorisation (SSE2 on x86-64) makes them as wide as the portable ISA allows.
  constexpr std::size_t kWords = kStep / sizeof(std::uint64_t);
  std::uint64_t acc[8] = {};
  for (std::size_t i = 0; i < len; i += kStep)
    for (std::size_t s = 0; s < kStreams; ++s) {
      const auto* w = reinterpret_cast<const std::uint64_t*>(p + s * len + i);
      for (std::size_t k = 0; k < kWords; ++k) acc[k % 8] += w[k];
    }
  std::uint64_t sum = 0;
  for (std::uint64_t a : acc) sum += a;
  return static_cast<float>(sum);
}

#if defined(__x86_64__)
ORION_AVX2 float sum_avx2(const std::byte* p, std::size_t len) {
  __m256i acc[8];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (std::size_t i = 0; i < len; i += kStep)
    for (std::size_t s = 0; s < kStreams; ++s)
      for (std::size_t k = 0; k < kLinesPerStream; ++k) {
        const auto* line = reinterpret_cast<const __m256i*>(p + s * len + i + 64 * k);
        __m256i& a = acc[s * kLinesPerStream + k];
        // Both halves of every 64-byte line: every byte is read.
        a = _mm256_add_epi64(a, _mm256_add_epi64(_mm256_load_si256(line),
                                                 _mm256_load_si256(line + 1)));
      }
  __m256i sum = acc[0];
  for (int k = 1; k < 8; ++k) sum = _mm256_add_epi64(sum, acc[k]);
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  return static_cast<float>(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
}

ORION_AVX512 float sum_avx512(const std::byte* p, std::size_t len) {
  __m512i acc[8];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (std::size_t i = 0; i < len; i += kStep)
    for (std::size_t s = 0; s < kStreams; ++s)
      for (std::size_t k = 0; k < kLinesPerStream; ++k) {
        __m512i& a = acc[s * kLinesPerStream + k];
        a = _mm512_add_epi64(a, _mm512_load_si512(p + s * len + i + 64 * k));
      }
  __m512i sum = acc[0];
  for (int k = 1; k < 8; ++k) sum = _mm512_add_epi64(sum, acc[k]);
  alignas(64) std::uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  std::uint64_t total = 0;
  for (std::uint64_t v : lanes) total += v;
  return static_cast<float>(total);
}
#endif

#if defined(__aarch64__)
float sum_neon(const std::byte* p, std::size_t len) {
  uint64x2_t acc[8];
  for (auto& a : acc) a = vdupq_n_u64(0);
  for (std::size_t i = 0; i < len; i += kStep)
    for (std::size_t s = 0; s < kStreams; ++s)
      for (std::size_t k = 0; k < kLinesPerStream; ++k) {
        const auto* line = reinterpret_cast<const std::uint64_t*>(p + s * len + i + 64 * k);
        uint64x2_t& a = acc[s * kLinesPerStream + k];
        // All four 16-byte quarters of every 64-byte line: every byte is read.
        a = vaddq_u64(a, vaddq_u64(vaddq_u64(vld1q_u64(line), vld1q_u64(line + 2)),
                                   vaddq_u64(vld1q_u64(line + 4), vld1q_u64(line + 6))));
      }
  uint64x2_t sum = acc[0];
  for (int k = 1; k < 8; ++k) sum = vaddq_u64(sum, acc[k]);
  return static_cast<float>(vgetq_lane_u64(sum, 0) + vgetq_lane_u64(sum, 1));
}
#endif

using SumFn = float (*)(const std::byte*, std::size_t);

SumFn sum_for(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512) return sum_avx512;
  if (isa == Isa::avx2) return sum_avx2;
#elif defined(__aarch64__)
  if (isa == Isa::neon) return sum_neon;
#endif
  (void)isa;
  return sum_scalar;
}

// ---- FMA peak: `iters` rounds of independent FMA chains; returns flops done ----

double fma_scalar(std::int64_t iters) {
  constexpr int kChains = 16;
  float acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = 0.001f * static_cast<float>(k);
  // acc -> acc * a + b converges to b / (1 - a) = 1: no overflow and no subnormals.
  const float a = 0.999f, b = 0.001f;
  for (std::int64_t i = 0; i < iters; ++i)
    for (float& v : acc) v = v * a + b;
  float s = 0;
  for (float v : acc) s += v;
  consume(s);
  return 2.0 * kChains * static_cast<double>(iters);
}

#if defined(__x86_64__)
ORION_AVX2 double fma_avx2(std::int64_t iters) {
  constexpr int kChains = 12;  // 12 of the 16 ymm registers; two FMA pipes x latency 4-5
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(0.001f * static_cast<float>(k));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& v : acc) v = _mm256_fmadd_ps(v, a, b);
  }
  __m256 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_ps(s, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  consume(lanes[0] + lanes[7]);
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

ORION_AVX512 double fma_avx512(std::int64_t iters) {
  constexpr int kChains = 24;  // 24 of the 32 zmm registers
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.001f * static_cast<float>(k));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  // Fully unrolled, so that the chains live in registers: rolled, GCC 12 interchanges the
  // loops and keeps acc in memory, a load and a store per FMA, which measured below the FMA
  // rate that oneDNN's sgemm reaches (docs/PERFORMANCE.md, "How each benchmark measures its
  // limit").
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (auto& v : acc) v = _mm512_fmadd_ps(v, a, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  consume(_mm512_reduce_add_ps(s));
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}
#endif

#if defined(__aarch64__)
double fma_neon(std::int64_t iters) {
  // 24 of the 32 q registers: enough chains for four FMA pipes of latency four, with room to
  // spare. Every loop over the chains is unrolled, the set-up and the final sum included:
  // otherwise GCC 12 keeps acc in memory and stores it on every round, as in fma_avx512.
  constexpr int kChains = 24;
  float32x4_t acc[kChains];
#pragma GCC unroll 24
  for (int k = 0; k < kChains; ++k) acc[k] = vdupq_n_f32(0.001f * static_cast<float>(k));
  // FMLA accumulates into its destination, so the chain runs through the addend: acc + a * b,
  // then acc - a * b, which keeps acc near its start (acc * a + b, the x86 loops' form, costs a
  // register copy per FMA here).
  const float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(0.001f), nb = vdupq_n_f32(-0.001f);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (auto& v : acc) v = vfmaq_f32(v, a, b);
#pragma GCC unroll 24
    for (auto& v : acc) v = vfmaq_f32(v, a, nb);
  }
  float32x4_t s = acc[0];
#pragma GCC unroll 24
  for (int k = 1; k < kChains; ++k) s = vaddq_f32(s, acc[k]);
  consume(vaddvq_f32(s));
  return 2.0 * 4 * kChains * 2 * static_cast<double>(iters);
}
#endif

using FmaFn = double (*)(std::int64_t);

FmaFn fma_for(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512) return fma_avx512;
  if (isa == Isa::avx2) return fma_avx2;
#elif defined(__aarch64__)
  if (isa == Isa::neon) return fma_neon;
#endif
  (void)isa;
  return fma_scalar;
}

// Runs fn(t) once on each of the pool's threads' shares t = 0..threads-1, as one
// parallel_for with one chunk per thread.
template <class Fn>
void on_each_thread(ThreadPool& pool, const Fn& fn) {
  pool.parallel_for(0, pool.size(), 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t t = lo; t < hi; ++t) fn(t);
  });
}

}  // namespace

double measure_read_bandwidth_gbps(ThreadPool& pool, std::size_t bytes, int repeats) {
  if (bytes < (std::size_t{1} << 20))
    throw Error("measure_read_bandwidth_gbps: " + std::to_string(bytes) +
                " bytes (at least 1 MiB, and far more than the caches for a true figure)");
  if (repeats < 1)
    throw Error("measure_read_bandwidth_gbps: " + std::to_string(repeats) + " repeats");
  const auto threads = static_cast<std::size_t>(pool.size());
  // The buffer is cut into pieces handed out one at a time to whichever thread is free, as the
  // kernels' row chunks are: with one fixed share per thread, a pass lasts as long as its
  // slower thread, and on a VM whose two vCPUs are not equally fast at every moment the probe
  // read below what the gemv kernels themselves streamed (docs/PERFORMANCE.md, "Smaller
  // measurements behind the code").
  const std::size_t pieces = kPiecesPerThread * threads;
  const std::size_t len = bytes / pieces / kStreams / kStep * kStep;  // one stream of a piece
  if (len == 0)
    throw Error("measure_read_bandwidth_gbps: " + std::to_string(bytes) + " bytes are too few for " +
                std::to_string(pieces) + " pieces of " + std::to_string(kStreams) + " streams");
  const std::size_t piece = len * kStreams;
  const std::size_t total = piece * pieces;
  // The same allocation as the weights' (core/huge_pages.h), so that the probe and the kernels
  // it is compared with pay the same address translation.
  const LargeArray<std::byte> buffer = make_large_array<std::byte>(total);
  std::byte* base = buffer.get();

  // One pass: every piece read once, by whichever thread takes it; returns the wall time.
  const auto pass = [&](const auto& read_piece) {
    std::atomic<std::size_t> next{0};
    Stopwatch clock;
    on_each_thread(pool, [&](std::int64_t t) {
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < pieces;)
        read_piece(static_cast<std::size_t>(t), base + i * piece);
    });
    return clock.seconds();
  };
  pass([&](std::size_t, std::byte* p) { std::memset(p, 1, piece); });  // written once

  const SumFn sum = sum_for(best_isa());
  std::vector<float> sums(threads * 16);  // one cache line per thread
  double best = 0;
  for (int i = 0; i <= repeats; ++i) {  // pass 0 is the warm-up
    const double seconds = pass([&](std::size_t t, std::byte* p) { sums[t * 16] += sum(p, len); });
    if (i > 0 && seconds > 0) best = std::max(best, static_cast<double>(total) / seconds);
  }
  for (std::size_t i = 0; i < threads; ++i) consume(sums[i * 16]);
  return best / 1e9;
}

double measure_fma_peak_gflops(ThreadPool& pool, Isa isa) {
  if (!isa_supported(isa))
    throw Error("measure_fma_peak_gflops: this CPU cannot run the " + std::string(isa_name(isa)) +
                " path");
  const FmaFn fma = fma_for(isa);
  const auto threads = static_cast<std::size_t>(pool.size());
  std::vector<double> flops(threads * 8);  // one cache line per thread

  const auto run = [&](std::int64_t iters) {
    Stopwatch clock;
    on_each_thread(pool,
                   [&](std::int64_t t) { flops[static_cast<std::size_t>(t) * 8] = fma(iters); });
    return clock.seconds();
  };
  // Grow the run until it lasts about 20 ms, then keep the best of three.
  std::int64_t iters = 1 << 12;
  while (run(iters) < 0.02 && iters < (std::int64_t{1} << 36)) iters *= 2;
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const double seconds = run(iters);
    double done = 0;
    for (std::size_t t = 0; t < threads; ++t) done += flops[t * 8];
    if (seconds > 0) best = std::max(best, done / seconds);
  }
  return best / 1e9;
}

}  // namespace orion::exec::cpu
