// bench_decode_matrices [threads] [rounds] [gpt2|qwen3] [vectors]: the GEMVs of one token back
// to back, as decoding runs them but with nothing in between, in GB/s of weight and scale bytes
// and in tokens a second of the matrices alone. gpt2 (the default): GPT-2 124M's 49 (12 layers
// of 2304x768, 768x768, 3072x768 and 768x3072, then the 50257x768 head); qwen3: Qwen3-0.6B's 196
// (28 layers of q 2048x1024, k and v 1024x1024, o 1024x2048, gate and up 3072x1024, down
// 1024x3072; no head). Every q4 (MLX's 4-bit, group 64) and q8 kernel variant this CPU runs
// (AVX-512, AVX2 and their VNNI forms on x86, NEON with and without SDOT on arm64), f16 (on x86
// also without the AVX2 kernel's prefetching) and f32, on each SIMD Isa. Then the batched forms
// (gemv_*_columns, as a server's batched decode runs them): `vectors` (default 4) vectors
// against each matrix in one call, with each kernel that has a form for several vectors, and
// with the same kernel taking the vectors one at a time over blocks of rows kept in L2 (what the
// batched form does without such a kernel), each reported as the call's time over the single
// vector's in the same round. The variants take turns within each round, each round starting
// with the next one, so that this VM's bandwidth drift (docs/PERFORMANCE.md, "Machines") hits
// them alike; each round's read bandwidth is probed before it. A kernel's own streaming rate is
// told apart from what decoding adds around it (docs/PERFORMANCE.md, "How each benchmark
// measures its limit").
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
#include "exec/cpu/gemv_columns.h"
#include "exec/cpu/gemv_q4.h"
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/machine_limits.h"
#include "exec/cpu/quantize.h"

using namespace orion;
using namespace orion::exec::cpu;

namespace {

constexpr int kBlock = 32;
constexpr int kGroup = 64;  // MLX's default

struct Shape {
  std::int64_t rows, cols;
};

std::vector<Shape> token_shapes(const std::string& model) {
  std::vector<Shape> s;
  if (model == "qwen3") {
    for (int l = 0; l < 28; ++l)
      for (const Shape& m : {Shape{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}})
        s.push_back(m);
    return s;
  }
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
  LargeArray<std::uint8_t> q4;
  LargeArray<float> scale_bias;
  LargeArray<std::uint16_t> h;
  LargeArray<float> f;
};

Matrix make_matrix(Shape shape, std::uint32_t seed) {
  const auto n = static_cast<std::size_t>(shape.rows * shape.cols);
  const std::int64_t nb = shape.cols / kBlock;
  const std::int64_t ng = shape.cols / kGroup;
  Matrix m{shape, make_large_array<std::int8_t>(n), make_large_array<float>(static_cast<std::size_t>(shape.rows * nb)),
           make_large_array<std::uint8_t>(n / 2), make_large_array<float>(static_cast<std::size_t>(2 * shape.rows * ng)),
           make_large_array<std::uint16_t>(n), make_large_array<float>(n)};
  float* w = m.f.get();  // the f32 weights, from which the other formats are made
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    w[i] = static_cast<float>(static_cast<std::int32_t>(seed >> 8) - (1 << 23)) * 1e-8f;
  }
  quantize_q8(w, shape.rows, shape.cols, kBlock, m.q.get(), m.scales.get());
  floats_to_halves(std::span<const float>(w, n), std::span(m.h.get(), n));
  // MLX's affine quantisation: per group, scale (max - min) / 15 and bias min.
  for (std::int64_t g = 0; g < shape.rows * ng; ++g) {
    const float* wg = w + g * kGroup;
    const auto [lo, hi] = std::minmax_element(wg, wg + kGroup);
    const float scale = (*hi - *lo) / 15.0f;
    m.scale_bias[static_cast<std::size_t>(2 * g)] = scale;
    m.scale_bias[static_cast<std::size_t>(2 * g + 1)] = *lo;
    for (int c = 0; c < kGroup; c += 2) {
      const auto nibble = [&](int i) { return static_cast<std::uint8_t>(std::lround(scale > 0 ? (wg[i] - *lo) / scale : 0.0f)); };
      m.q4[static_cast<std::size_t>((g * kGroup + c) / 2)] = static_cast<std::uint8_t>(nibble(c) | nibble(c + 1) << 4);
    }
  }
  return m;
}

Q8Weights q8_weights(const Matrix& m) { return {m.q.get(), m.scales.get(), m.shape.rows, m.shape.cols, kBlock}; }
Q4Weights q4_weights(const Matrix& m) { return {m.q4.get(), m.scale_bias.get(), m.shape.rows, m.shape.cols, kGroup}; }

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  const std::string model = argc > 3 ? argv[3] : "gpt2";
  const std::int64_t n = argc > 4 ? std::atoi(argv[4]) : 4;
  if (model != "gpt2" && model != "qwen3") {
    std::fprintf(stderr, "bench_decode_matrices: model '%s' (gpt2 or qwen3)\n", model.c_str());
    return 2;
  }
  if (n < 2) {
    std::fprintf(stderr, "bench_decode_matrices: %lld vectors (2 or more)\n", static_cast<long long>(n));
    return 2;
  }
  ThreadPool pool(threads);
  std::vector<Matrix> matrices;
  double q4_bytes = 0, q8_bytes = 0, f16_bytes = 0, f32_bytes = 0;
  std::int64_t widest = 0;
  for (const Shape& s : token_shapes(model)) {
    matrices.push_back(make_matrix(s, static_cast<std::uint32_t>(matrices.size() + 1)));
    q4_bytes += static_cast<double>(s.rows * s.cols) * (0.5 + 8.0 / kGroup);
    q8_bytes += static_cast<double>(s.rows * s.cols) * (1 + 4.0 / kBlock);
    f16_bytes += static_cast<double>(s.rows * s.cols) * 2;
    f32_bytes += static_cast<double>(s.rows * s.cols) * 4;
    widest = std::max({widest, s.rows, s.cols});
  }
  // n vectors of the widest length; the single-vector variants take the first.
  std::vector<float> X(static_cast<std::size_t>(n * widest)), Y(X.size());
  for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  const float* x = X.data();
  float* y = Y.data();

  struct Variant {
    std::string name;
    double bytes;
    std::function<void(const Matrix&)> run;
    std::ptrdiff_t single = -1;  // a batched variant's one-vector twin
    std::vector<double> fractions, gbps, seconds;
  };
  std::vector<Variant> variants;
  const auto add = [&](std::string name, double bytes, std::function<void(const Matrix&)> run, std::ptrdiff_t single = -1) {
    variants.push_back({std::move(name), bytes, std::move(run), single, {}, {}, {}});
    return static_cast<std::ptrdiff_t>(variants.size() - 1);
  };
  const std::string batch = " x" + std::to_string(n), one_by_one = " one at a time";
  // The dense formats' vectors one at a time over the row blocks, as gemv_*_columns runs them
  // where an Isa has no kernel for several.
  const auto dense_one_by_one = [&](const Matrix& m, Isa isa, bool f16) {
    const detail::RowKernels& k = detail::row_kernels(isa, "bench_decode_matrices");
    const std::int64_t rows = m.shape.rows, cols = m.shape.cols;
    detail::for_column_blocks(rows, cols, n, cols * (f16 ? 2 : 4), 1, y, pool,
                              [&](std::int64_t j, int, std::int64_t b0, std::int64_t b1) {
                                if (f16)
                                  k.f16(m.h.get(), x + j * cols, nullptr, y + j * rows, b0, b1, cols);
                                else
                                  k.f32(m.f.get(), x + j * cols, nullptr, y + j * rows, b0, b1, cols);
                              },
                              {});
  };
  // A quantised format's kernel variants: one vector; and, with a form for several, the n vectors
  // in one call, and the same kernel taking them one at a time.
  const auto add_quantised = [&](const std::string& format, auto kernels, double bytes, auto one_call, auto columns_call) {
    for (const auto& k : kernels) {
      if (!k.supported() || k.isa == Isa::scalar) continue;  // scalar: for portability, not speed
      const std::string name = format + " " + std::string(k.name);
      const std::ptrdiff_t one = add(name, bytes, [=](const Matrix& m) { one_call(k, m); });
      if (!k.vectors) continue;
      add(name + batch, bytes, [=](const Matrix& m) { columns_call(k, m); }, one);
      auto alone = k;
      alone.vectors = nullptr;
      add(name + batch + one_by_one, bytes, [=](const Matrix& m) { columns_call(alone, m); }, one);
    }
  };
  add_quantised(
      "q4", detail::q4_kernels(), q4_bytes,
      [&](const detail::Q4Kernel& k, const Matrix& m) {
        detail::gemv_q4_with(k, q4_weights(m), x, nullptr, y, pool, Activation::none);
      },
      [&](const detail::Q4Kernel& k, const Matrix& m) {
        detail::gemv_q4_columns_with(k, q4_weights(m), x, nullptr, y, n, pool, Activation::none);
      });
  add_quantised(
      "q8", detail::q8_kernels(), q8_bytes,
      [&](const detail::Q8Kernel& k, const Matrix& m) {
        detail::gemv_q8_with(k, q8_weights(m), x, nullptr, y, pool, Activation::none);
      },
      [&](const detail::Q8Kernel& k, const Matrix& m) {
        detail::gemv_q8_columns_with(k, q8_weights(m), x, nullptr, y, n, pool, Activation::none);
      });
  std::vector<Isa> simd;
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::neon})
    if (isa_supported(isa)) simd.push_back(isa);
  for (Isa isa : simd) {
    const std::string name(isa_name(isa));
    const std::ptrdiff_t one = add("f16 " + name, f16_bytes, [&, isa](const Matrix& m) {
      gemv_f16(m.h.get(), x, nullptr, y, m.shape.rows, m.shape.cols, pool, isa);
    });
    add("f16 " + name + batch, f16_bytes, [&, isa](const Matrix& m) {
      gemv_f16_columns(m.h.get(), x, nullptr, y, m.shape.rows, m.shape.cols, n, pool, isa);
    }, one);
    add("f16 " + name + batch + one_by_one, f16_bytes, [&, isa](const Matrix& m) { dense_one_by_one(m, isa, true); }, one);
  }
#if defined(__x86_64__)
  if (isa_supported(Isa::avx2))
    add("f16 avx2-no-prefetch", f16_bytes, [&](const Matrix& m) {
      detail::for_rows(m.shape.rows, m.shape.cols, y, pool, [&](std::int64_t r0, std::int64_t r1) {
        detail::kAvx2KernelsWithoutPrefetch.f16(m.h.get(), x, nullptr, y, r0, r1, m.shape.cols);
      });
    });
#endif
  for (Isa isa : simd) {
    const std::string name(isa_name(isa));
    const std::ptrdiff_t one = add("f32 " + name, f32_bytes, [&, isa](const Matrix& m) {
      gemv_f32(m.f.get(), x, nullptr, y, m.shape.rows, m.shape.cols, pool, isa);
    });
    add("f32 " + name + batch, f32_bytes, [&, isa](const Matrix& m) {
      gemv_f32_columns(m.f.get(), x, y, m.shape.rows, m.shape.cols, n, pool, isa);
    }, one);
    add("f32 " + name + batch + one_by_one, f32_bytes, [&, isa](const Matrix& m) { dense_one_by_one(m, isa, false); }, one);
  }
  std::printf("%s: %d threads, %d rounds of one token's %zu matrices per variant (q4 %.0f MB, q8 %.0f MB, f16 %.0f MB, f32 %.0f MB)\n",
              model.c_str(), pool.size(), rounds, matrices.size(), q4_bytes / 1e6, q8_bytes / 1e6, f16_bytes / 1e6,
              f32_bytes / 1e6);
  for (int round = 0; round < rounds; ++round) {
    const double bw = measure_read_bandwidth_gbps(pool);
    for (std::size_t k = 0; k < variants.size(); ++k) {  // each round starts with the next one
      Variant& v = variants[(k + static_cast<std::size_t>(round)) % variants.size()];
      Stopwatch t;
      for (const Matrix& m : matrices) v.run(m);
      const double seconds = t.seconds(), gbps = v.bytes / seconds / 1e9;
      v.seconds.push_back(seconds);
      v.gbps.push_back(gbps);
      v.fractions.push_back(gbps / bw);
    }
  }
  // Each against the first variant of its weight format in the same round: the comparison the
  // drift disturbs least.
  for (Variant& v : variants) {
    if (v.single >= 0) continue;
    const std::string format = v.name.substr(0, v.name.find(' '));
    const Variant& first = *std::find_if(variants.begin(), variants.end(), [&](const Variant& u) {
      return u.name.substr(0, u.name.find(' ')) == format;
    });
    std::vector<double> ratio;
    for (std::size_t r = 0; r < v.gbps.size(); ++r) ratio.push_back(v.gbps[r] / first.gbps[r]);
    const Spread f = spread(v.fractions), g = spread(v.gbps), q = spread(ratio);
    std::printf("  %-20s %5.1f GB/s (%.1f-%.1f), %6.1f tok/s, %5.1f%% of the probe (%.1f-%.1f%%), x%.3f of %s (%.3f-%.3f)\n",
                v.name.c_str(), g.median, g.min, g.max, g.median * 1e9 / v.bytes, 100 * f.median, 100 * f.min,
                100 * f.max, q.median, first.name.c_str(), q.min, q.max);
  }
  // The batched calls: the time of one call with n vectors over the one-vector call's in the
  // same round (n would be no gain; 1 all of it), and W's bytes over that time.
  std::printf("%lld vectors a call, its time over one vector's (paired by round):\n", static_cast<long long>(n));
  for (Variant& v : variants) {
    if (v.single < 0) continue;
    const Variant& one = variants[static_cast<std::size_t>(v.single)];
    std::vector<double> ratio;
    for (std::size_t r = 0; r < v.seconds.size(); ++r) ratio.push_back(v.seconds[r] / one.seconds[r]);
    const Spread q = spread(ratio), g = spread(v.gbps), f = spread(v.fractions);
    std::printf("  %-36s x%.3f (%.3f-%.3f) of %s; W at %5.1f GB/s (%.1f-%.1f), %5.1f%% of the probe\n", v.name.c_str(),
                q.median, q.min, q.max, one.name.c_str(), g.median, g.min, g.max, 100 * f.median);
  }
  // Tokens a second of the first (best) q4 variant over the first q8 one's, paired by round.
  const auto first_of = [&](const std::string& format) {
    return std::find_if(variants.begin(), variants.end(), [&](const Variant& u) { return u.name.rfind(format + " ", 0) == 0; });
  };
  const auto q4 = first_of("q4"), q8 = first_of("q8");
  if (q4 != variants.end() && q8 != variants.end()) {
    std::vector<double> ratio;
    for (std::size_t r = 0; r < q4->gbps.size(); ++r) ratio.push_back((q4->gbps[r] / q4->bytes) / (q8->gbps[r] / q8->bytes));
    const Spread t = spread(ratio);
    std::printf("  tok/s of %s over %s: x%.3f (%.3f-%.3f); bytes x%.3f\n", q4->name.c_str(), q8->name.c_str(), t.median,
                t.min, t.max, q8->bytes / q4->bytes);
  }
}
