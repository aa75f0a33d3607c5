// bench_sgemm_<library>: row-major sgemm at GPT-2 124M's prefill shapes through one BLAS,
// against the f32 FMA peak measured in the same run with the same number of threads. Built
// once per library (OpenBLAS, BLIS, oneDNN) to pick the one Orion uses; docs/PERFORMANCE.md
// records the figures. Usage: bench_sgemm_<library> [threads=2] [seconds per shape=0.5]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/stopwatch.h"
#include "core/thread_pool.h"
#include "exec/cpu/machine_limits.h"
#include "sgemm_backend.h"

namespace {

struct Shape {
  int K, N;
  const char* what;
};

// The products of one GPT-2 124M layer: C[T, N] = X[T, K] W^T.
constexpr Shape kShapes[] = {{768, 2304, "qkv"}, {768, 768, "attn proj"}, {768, 3072, "mlp fc"}, {3072, 768, "mlp proj"}};
constexpr int kTokens[] = {128, 512};

}  // namespace

int main(int argc, char** argv) {
  using namespace orion;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const double budget = argc > 2 ? std::atof(argv[2]) : 0.5;
  if (threads < 1 || budget <= 0) {
    std::fprintf(stderr, "usage: %s [threads >= 1] [seconds per shape > 0]\n", argv[0]);
    return 2;
  }
  bench::sgemm_set_threads(threads);
  ThreadPool pool(threads);
  const double peak = exec::cpu::measure_fma_peak_gflops(pool);
  std::printf("%s\n  from %s\n  %d threads, measured f32 FMA peak %.1f GFLOP/s (%s)\n", bench::sgemm_library().c_str(),
              bench::sgemm_origin().c_str(), threads, peak, std::string(exec::cpu::isa_name(exec::cpu::best_isa())).c_str());
  std::printf("  %-10s %5s %5s %5s  %-6s %9s %9s %7s\n", "matrix", "M", "K", "N", "B", "GFLOP/s", "best", "peak%");
  Rng rng(1);
  double sum_flops = 0, sum_seconds = 0;
  for (int M : kTokens) {
    for (const Shape& s : kShapes) {
      std::vector<float> A(static_cast<std::size_t>(M) * s.K), B(static_cast<std::size_t>(s.K) * s.N),
          C(static_cast<std::size_t>(M) * s.N);
      rng.fill_normal(A, 0.0f, 1.0f);
      rng.fill_normal(B, 0.0f, 0.02f);
      const double flops = 2.0 * M * s.K * s.N;
      // B^T (weights stored [out, in], as Orion packs them) is what prefill runs; B as
      // [in, out] is shown for comparison.
      for (bool trans_b : {true, false}) {
        for (int w = 0; w < 2; ++w) bench::sgemm_run(trans_b, M, s.N, s.K, A.data(), B.data(), C.data());
        std::vector<double> rates;
        Stopwatch total;
        while (total.seconds() < budget || rates.size() < 5) {
          Stopwatch one;
          bench::sgemm_run(trans_b, M, s.N, s.K, A.data(), B.data(), C.data());
          rates.push_back(flops / one.seconds() / 1e9);
        }
        const double med = median(rates);
        double best = 0;
        for (double r : rates) best = std::max(best, r);
        if (trans_b) {
          sum_flops += flops;
          sum_seconds += flops / (med * 1e9);
        }
        std::printf("  %-10s %5d %5d %5d  %-6s %9.1f %9.1f %6.1f%%\n", s.what, M, s.K, s.N, trans_b ? "[N,K]" : "[K,N]", med, best,
                    100 * med / peak);
      }
    }
  }
  const double overall = sum_flops / sum_seconds / 1e9;
  std::printf("  all B^T shapes (time-weighted medians): %.1f GFLOP/s, %.1f%% of peak\n", overall, 100 * overall / peak);
  return 0;
}
