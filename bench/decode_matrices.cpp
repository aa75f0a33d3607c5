// bench_decode_matrices [threads] [rounds]: the 49 GEMVs of one GPT-2 124M token (12 layers of
// 2304x768, 768x768, 3072x768 and 768x3072, then the 50257x768 head) back to back, as decoding
// runs them but with nothing in between, in GB/s of weight and scale bytes: every q8 kernel
// variant this CPU runs (AVX-512, AVX2 and their VNNI forms on x86, NEON with and without SDOT
// on arm64), f16 (on x86 also without the AVX2 kernel's prefetching) and f32. The
// variants take turns within each round, each round starting with the next one, so that this
// VM's bandwidth drift (docs/PERFORMANCE.md, "Machines") hits them alike; each round's read
// bandwidth is probed before it. A kernel's own streaming rate is told apart from what decoding
// adds around it (docs/PERFORMANCE.md, "How each benchmark measures its limit").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/huge_pages.h"
#include "core/stopwatch.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/machine_limits.h"
#include "exec/cpu/quantize.h"

using namespace orion;
using namespace orion::exec::cpu;

namespace {

constexpr int kBlock = 32;

struct Shape {
  std::int64_t rows, cols;
};

std::vector<Shape> token_shapes() {
  std::vector<Shape> s;
  for (int l = 0; l < 12; ++l) {
    s.push_back({2304, 768});
    s.push_back({768, 768});
    s.push_back({3072, 768});
    s.push_back({768, 3072});
  }
  s.push_back({50257, 768});
  return s;
}

// One matrix in every format, from the same random f32 weights.
struct Matrix {
  Shape shape;
  LargeArray<std::int8_t> q;
  LargeArray<float> scales;
  LargeArray<std::uint16_t> h;
  LargeArray<float> f;
};

Matrix make_matrix(Shape shape, std::uint32_t seed) {
  const auto n = static_cast<std::size_t>(shape.rows * shape.cols);
  const std::int64_t nb = shape.cols / kBlock;
  Matrix m{shape, make_large_array<std::int8_t>(n), make_large_array<float>(static_cast<std::size_t>(shape.rows * nb)),
           make_large_array<std::uint16_t>(n), make_large_array<float>(n)};
  float* w = m.f.get();  // the f32 weights, from which the other formats are made
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    w[i] = static_cast<float>(static_cast<std::int32_t>(seed >> 8) - (1 << 23)) * 1e-8f;
  }
  quantize_q8(w, shape.rows, shape.cols, kBlock, m.q.get(), m.scales.get());
  floats_to_halves(std::span<const float>(w, n), std::span(m.h.get(), n));
  return m;
}

Q8Weights q8_weights(const Matrix& m) { return {m.q.get(), m.scales.get(), m.shape.rows, m.shape.cols, kBlock}; }

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  ThreadPool pool(threads);
  std::vector<Matrix> matrices;
  double q8_bytes = 0, f16_bytes = 0, f32_bytes = 0;
  std::int64_t widest = 0;
  for (const Shape& s : token_shapes()) {
    matrices.push_back(make_matrix(s, static_cast<std::uint32_t>(matrices.size() + 1)));
    q8_bytes += static_cast<double>(s.rows * s.cols) * (1 + 4.0 / kBlock);
    f16_bytes += static_cast<double>(s.rows * s.cols) * 2;
    f32_bytes += static_cast<double>(s.rows * s.cols) * 4;
    widest = std::max({widest, s.rows, s.cols});
  }
  std::vector<float> x(static_cast<std::size_t>(widest), 0.01f), y(static_cast<std::size_t>(widest));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;

  struct Variant {
    std::string name;
    double bytes;
    std::function<void(const Matrix&)> run;
    std::vector<double> fractions, gbps;
  };
  std::vector<Variant> variants;
  for (const detail::Q8Kernel& k : detail::q8_kernels())
    if (k.supported() && k.isa != Isa::scalar)  // scalar: for portability, not speed
      variants.push_back({"q8 " + std::string(k.name), q8_bytes, [&x, &y, &pool, &k](const Matrix& m) {
                            detail::gemv_q8_with(k, q8_weights(m), x.data(), nullptr, y.data(), pool, Activation::none);
                          }, {}, {}});
  const std::string isa(isa_name(best_isa()));
  variants.push_back({"f16 " + isa, f16_bytes, [&x, &y, &pool](const Matrix& m) {
                        gemv_f16(m.h.get(), x.data(), nullptr, y.data(), m.shape.rows, m.shape.cols, pool);
                      }, {}, {}});
#if defined(__x86_64__)
  if (isa_supported(Isa::avx2))
    variants.push_back({"f16 avx2-no-prefetch", f16_bytes, [&x, &y, &pool](const Matrix& m) {
                          detail::for_rows(m.shape.rows, m.shape.cols, y.data(), pool, [&](std::int64_t r0, std::int64_t r1) {
                            detail::kAvx2KernelsWithoutPrefetch.f16(m.h.get(), x.data(), nullptr, y.data(), r0, r1, m.shape.cols);
                          });
                        }, {}, {}});
#endif
  variants.push_back({"f32 " + isa, f32_bytes, [&x, &y, &pool](const Matrix& m) {
                        gemv_f32(m.f.get(), x.data(), nullptr, y.data(), m.shape.rows, m.shape.cols, pool);
                      }, {}, {}});
  std::printf("%d threads, %d rounds of one token's 49 matrices per variant (q8 %.0f MB, f16 %.0f MB, f32 %.0f MB)\n",
              pool.size(), rounds, q8_bytes / 1e6, f16_bytes / 1e6, f32_bytes / 1e6);
  for (int round = 0; round < rounds; ++round) {
    const double bw = measure_read_bandwidth_gbps(pool);
    for (std::size_t k = 0; k < variants.size(); ++k) {  // each round starts with the next one
      Variant& v = variants[(k + static_cast<std::size_t>(round)) % variants.size()];
      Stopwatch t;
      for (const Matrix& m : matrices) v.run(m);
      const double gbps = v.bytes / t.seconds() / 1e9;
      v.gbps.push_back(gbps);
      v.fractions.push_back(gbps / bw);
    }
  }
  // Each against the first variant of its weight format in the same round: the comparison the
  // drift disturbs least.
  for (Variant& v : variants) {
    const std::string format = v.name.substr(0, v.name.find(' '));
    const Variant& first = *std::find_if(variants.begin(), variants.end(), [&](const Variant& u) {
      return u.name.substr(0, u.name.find(' ')) == format;
    });
    std::vector<double> ratio;
    for (std::size_t r = 0; r < v.gbps.size(); ++r) ratio.push_back(v.gbps[r] / first.gbps[r]);
    const Spread f = spread(v.fractions), g = spread(v.gbps), q = spread(ratio);
    std::printf("  %-20s %5.1f GB/s (%.1f-%.1f), %5.1f%% of the probe (%.1f-%.1f%%), x%.3f of %s (%.3f-%.3f)\n",
                v.name.c_str(), g.median, g.min, g.max, 100 * f.median, 100 * f.min, 100 * f.max, q.median,
                first.name.c_str(), q.min, q.max);
  }
}
