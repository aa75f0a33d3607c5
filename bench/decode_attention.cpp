// bench_decode_attention [threads]: the fast decoders' attention for one token (attend_heads)
// with GPT-2 124M's shapes (12 layers of 12 heads of 64) over 128-1024 cached positions, in GB/s
// of the key/value cache read, against the read bandwidth measured just before. "cold": a 64 MiB
// buffer is streamed between calls, as the weights' GEMVs evict the cache between a layer's
// attentions in decoding; "warm": one layer's cache, called again at once (its ceiling from the
// caches, timed on the second of two calls). docs/PERFORMANCE.md ("Choices") has the figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/huge_pages.h"
#include "core/stopwatch.h"
#include "core/thread_pool.h"
#include "exec/cpu/machine_limits.h"
#include "engine/fast/fast_attention.h"

using namespace orion;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  constexpr std::int64_t kLayers = 12, kHeads = 12, kDim = 64, kPositions = 1024;
  constexpr std::size_t kEvict = std::size_t{16} << 20;  // floats: 64 MiB
  ThreadPool pool(threads);
  std::vector<LargeArray<float>> K, V;
  for (std::int64_t l = 0; l < kLayers; ++l) {
    K.push_back(make_large_array<float>(kHeads * kPositions * kDim));
    V.push_back(make_large_array<float>(kHeads * kPositions * kDim));
    for (std::int64_t i = 0; i < kHeads * kPositions * kDim; ++i) {
      K.back().get()[i] = std::sin(0.001f * static_cast<float>(i));
      V.back().get()[i] = std::cos(0.001f * static_cast<float>(i));
    }
  }
  std::vector<float> q(kHeads * kDim, 0.1f), out(kHeads * kDim), scores(kHeads * kPositions);
  auto evict = make_large_array<float>(kEvict);
  std::fill_n(evict.get(), kEvict, 1.0f);
  float sink = 0;

  std::printf("%d threads; read bandwidth before: %.1f GB/s\n", pool.size(), exec::cpu::measure_read_bandwidth_gbps(pool));
  for (std::int64_t n : {128, 256, 512, 1024}) {
    const double kv_bytes = 2.0 * kHeads * static_cast<double>(n) * kDim * sizeof(float);  // one layer
    double cold = 1e9, warm = 1e9;
    for (int rep = 0; rep < 7; ++rep) {
      for (std::size_t i = 0; i < kEvict; i += 16) sink += evict.get()[i];
      Stopwatch c;
      for (std::int64_t l = 0; l < kLayers; ++l)
        engine::attend_heads(q.data(), K[static_cast<std::size_t>(l)].get(), V[static_cast<std::size_t>(l)].get(), kHeads,
                            kHeads, kPositions, n, kDim, 0.125f, scores.data(), out.data(), pool);
      cold = std::min(cold, c.seconds() / kLayers);
      Stopwatch w;
      for (int again = 0; again < 2; ++again) {  // the first call brings the layer's cache in
        if (again == 1) w.restart();
        engine::attend_heads(q.data(), K[0].get(), V[0].get(), kHeads, kHeads, kPositions, n, kDim, 0.125f, scores.data(),
                            out.data(), pool);
      }
      warm = std::min(warm, w.seconds());
    }
    std::printf("  %4lld positions: cold %6.1f GB/s (%.3f ms per token, 12 layers), warm %6.1f GB/s\n",
                static_cast<long long>(n), kv_bytes / cold / 1e9, 1e3 * cold * kLayers, kv_bytes / warm / 1e9);
  }
  std::printf("(checksum %g)\n", static_cast<double>(sink + out[0]));
}
