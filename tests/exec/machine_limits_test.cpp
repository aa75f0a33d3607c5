// The machine-limit probes give sane numbers. Tests check correctness, not speed: the bounds
// are wide enough for any machine and any load.
#include "exec/cpu/machine_limits.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace orion::exec::cpu {
namespace {

TEST(MachineLimits, ReadBandwidthIsSane) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const double gbps = measure_read_bandwidth_gbps(pool, std::size_t{64} << 20, 1);
    EXPECT_TRUE(std::isfinite(gbps)) << threads;
    EXPECT_GT(gbps, 0.1) << threads;
    EXPECT_LT(gbps, 1000.0) << threads;
  }
}

TEST(MachineLimits, FmaPeakIsSaneForEveryIsa) {
  ThreadPool pool(2);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
    if (!isa_supported(isa)) {
      EXPECT_THROW(measure_fma_peak_gflops(pool, isa), Error);
      continue;
    }
    const double gflops = measure_fma_peak_gflops(pool, isa);
    EXPECT_TRUE(std::isfinite(gflops)) << isa_name(isa);
    EXPECT_GT(gflops, 0.01) << isa_name(isa);
    EXPECT_LT(gflops, 1e6) << isa_name(isa);
  }
}

TEST(MachineLimits, RejectsTinyBuffersAndNoRepeats) {
  ThreadPool pool(1);
  EXPECT_THROW(measure_read_bandwidth_gbps(pool, 1024, 1), Error);
  EXPECT_THROW(measure_read_bandwidth_gbps(pool, std::size_t{64} << 20, 0), Error);
}

}  // namespace
}  // namespace orion::exec::cpu
