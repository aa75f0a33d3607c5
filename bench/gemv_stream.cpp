// bench_gemv_stream [threads] [MiB]: how fast each GEMV kernel streams one large matrix (far
// larger than the caches), against the read bandwidth measured just before and after, so that
// a kernel's own ceiling can be told apart from what decoding adds around it (docs/PERFORMANCE.md,
// "How each benchmark measures its limit"). Every q8 variant this CPU runs is timed, then f16 and f32 through best_isa().
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "exec/cpu/gemv_q8.h"
#include "exec/cpu/machine_limits.h"

using namespace orion;
using namespace orion::exec::cpu;

namespace {

constexpr std::int64_t kCols = 768;  // GPT-2 124M's width

// Best of 8 calls, in GB/s of weight (and scale) bytes.
double best_gbps(double bytes, const std::function<void()>& call) {
  double best = 0;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, bytes / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::int64_t mib = argc > 2 ? std::atoll(argv[2]) : 256;
  const std::int64_t rows = mib * (1 << 20) / 4 / kCols;  // the f32 matrix is `mib` MiB
  ThreadPool pool(threads);
  auto q = make_large_array<std::int8_t>(static_cast<std::size_t>(rows * kCols));
  auto scales = make_large_array<float>(static_cast<std::size_t>(rows * kCols / 32));
  auto h = make_large_array<std::uint16_t>(static_cast<std::size_t>(rows * kCols));
  auto f = make_large_array<float>(static_cast<std::size_t>(rows * kCols));
  for (std::int64_t i = 0; i < rows * kCols; ++i) {
    q.get()[i] = static_cast<std::int8_t>(i * 7 % 255 - 127);
    h.get()[i] = 0x2c00;  // 1/16
    f.get()[i] = 0.0625f;
  }
  for (std::int64_t i = 0; i < rows * kCols / 32; ++i) scales.get()[i] = 0.01f;
  std::vector<float> x(kCols), y(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < kCols; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) * 0.1f - 0.6f;

  std::printf("%d threads, %lld x %lld matrix; read bandwidth before: %.1f GB/s\n", pool.size(),
              static_cast<long long>(rows), static_cast<long long>(kCols), measure_read_bandwidth_gbps(pool));
  const Q8Weights W{q.get(), scales.get(), rows, kCols, 32};
  const double q8_bytes = static_cast<double>(rows * kCols) * (1 + 4.0 / 32);
  for (const detail::Q8Kernel& k : detail::q8_kernels()) {
    if (!k.supported()) continue;
    const double gbps = best_gbps(q8_bytes, [&] { detail::gemv_q8_with(k, W, x.data(), nullptr, y.data(), pool, Activation::none); });
    std::printf("  q8/32 %-12s %6.1f GB/s\n", std::string(k.name).c_str(), gbps);
  }
  std::printf("  f16 %-14s %6.1f GB/s\n", std::string(isa_name(best_isa())).c_str(),
              best_gbps(static_cast<double>(rows * kCols) * 2, [&] { gemv_f16(h.get(), x.data(), nullptr, y.data(), rows, kCols, pool); }));
  std::printf("  f32 %-14s %6.1f GB/s\n", std::string(isa_name(best_isa())).c_str(),
              best_gbps(static_cast<double>(rows * kCols) * 4, [&] { gemv_f32(f.get(), x.data(), nullptr, y.data(), rows, kCols, pool); }));
  // Several vectors against the one matrix (a server's batched decode): weight bytes streamed a
  // second, and the multiply-adds' rate.
  for (const std::int64_t n : {2, 3, 4, 8}) {
    std::vector<float> xs(static_cast<std::size_t>(n * kCols)), ys(static_cast<std::size_t>(n * rows));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = x[i % x.size()];
    const double gbps = best_gbps(static_cast<double>(rows * kCols) * 4, [&] {
      gemv_f32_columns(f.get(), xs.data(), ys.data(), rows, kCols, n, pool);
    });
    std::printf("  f32 x %lld vectors     %6.1f GB/s, %6.1f GFLOP/s\n", static_cast<long long>(n), gbps, gbps / 2 * n);
  }
  std::printf("read bandwidth after: %.1f GB/s\n", measure_read_bandwidth_gbps(pool));
}
