// The AdamW step over GPT-2 124M's parameters, timed against the machine's measured read
// bandwidth. Disabled by default (it allocates 2 GB and takes seconds); run with
//   test_train --gtest_also_run_disabled_tests --gtest_filter='AdamWBench*'
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "core/stopwatch.h"
#include "exec/cpu/machine_limits.h"
#include "model/gpt2/gpt2_config.h"
#include "model/gpt2/gpt2_model.h"
#include "train/optim/adamw.h"

namespace orion::train {
namespace {

TEST(AdamWBench, DISABLED_Gpt2_124mStep) {
  const model::Gpt2Config config;  // the defaults are GPT-2 124M's
  TensorMap params, grads;
  std::int64_t n = 0;
  for (const auto& [name, shape] : model::gpt2_param_shapes(config)) {
    Tensor p(DType::f32, shape), g(DType::f32, shape);
    for (float& x : g.span<float>()) x = 1e-3f;
    params.emplace(name, p);
    grads.emplace(name, g);
    n += p.numel();
  }
  AdamW opt({}, params);
  std::vector<double> step_ms, finite_ms;
  for (int i = 0; i < 6; ++i) {
    Stopwatch sw;
    ASSERT_TRUE(all_finite(grads, &opt.pool()));
    finite_ms.push_back(sw.ms());
    sw.restart();
    opt.step(params, grads, 1e-4);
    if (i > 0) step_ms.push_back(sw.ms());  // the first touches fresh pages
  }
  const double ms = median(step_ms), fin = median(finite_ms);
  // The norm pass reads the gradients; the update reads p, g, m, v and writes p, m, v.
  const double step_gbps = 32.0 * static_cast<double>(n) / (ms * 1e6);
  const double finite_gbps = 4.0 * static_cast<double>(n) / (fin * 1e6);
  const double read_gbps = exec::cpu::measure_read_bandwidth_gbps(opt.pool());
  std::printf("AdamW step, %.1fM params, %d threads, %s: %.1f ms (%.1f GB/s moved, %.0f%% of the measured read "
              "bandwidth %.1f GB/s); all_finite %.1f ms (%.1f GB/s)\n",
              static_cast<double>(n) / 1e6, opt.pool().size(), std::string(exec::cpu::isa_name(exec::cpu::best_isa())).c_str(),
              ms, step_gbps, 100.0 * step_gbps / read_gbps, read_gbps, fin, finite_gbps);
}

}  // namespace
}  // namespace orion::train
