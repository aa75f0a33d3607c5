// orion bench reduce: the data-parallel gradient sum (dist/collective.h) under mpirun: the time of
// a one-value sum (the latency alpha) and of a large one (each rank sends and receives
// 2 (N - 1) / N of the vector: the bandwidth beta), and from them an alpha-beta projection of a
// step's sum on other links and at other numbers of ranks.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "dist/collective.h"

namespace orion::cli {

namespace {

// Seconds of one sum of `n` floats, the median of `runs` after a warm-up.
double time_sum(dist::Collective& c, std::size_t n, int runs) {
  std::vector<float> v(n, 1.0f);
  c.sum(std::span<float>(v));
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    c.barrier();
    Stopwatch sw;
    c.sum(std::span<float>(v));
    t.push_back(sw.seconds());
  }
  std::vector<double> all(1, orion::median(t));
  c.sum(std::span<double>(all));  // the ranks' medians, averaged below
  return all[0] / c.size();
}

// The alpha-beta model of the ordered sum: 2 (N - 1) messages of latency alpha, 2 (N - 1) / N of
// the bytes at bandwidth beta.
double projected(double bytes, int ranks, double alpha_s, double beta_bytes_s) {
  return 2.0 * (ranks - 1) * alpha_s + 2.0 * (ranks - 1) / ranks * bytes / beta_bytes_s;
}

}  // namespace

void add_bench_reduce_command(CLI::App& bench) {
  struct Opts {
    double mb = 64, step_mb = 0;
    int runs = 11;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = bench.add_subcommand("reduce",
                                   "Under mpirun: the gradient sum's latency and bandwidth, and an alpha-beta projection of "
                                   "a step's sum on 10 GbE and Thunderbolt 5 at 2, 4 and 8 ranks");
  cmd->add_option("--mb", o->mb, "MB of floats in the bandwidth measurement")->check(CLI::Range(1.0, 4096.0))->capture_default_str();
  cmd->add_option("--step-mb", o->step_mb, "MB a training step sums (summary.json's reduced_bytes_per_step), for the projection; "
                  "0: --mb")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", o->runs, "Timed runs of each (the median)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    const std::shared_ptr<dist::Collective> c = dist::job_collective();
    if (c->size() < 2) throw Error("bench reduce measures a job of several ranks: run it under mpirun -np N (N >= 2)");
    const int n = c->size();
    // A one-value sum is 2 (N - 1) messages and nothing to speak of moved.
    const double alpha = time_sum(*c, 1, o->runs * 10) / (2.0 * (n - 1));
    const auto floats = static_cast<std::size_t>(o->mb * 1e6 / 4);
    const double t = time_sum(*c, floats, o->runs);
    const double moved = 2.0 * (n - 1) / n * static_cast<double>(floats) * 4;
    const double beta = moved / std::max(t - 2.0 * (n - 1) * alpha, 1e-9);
    if (c->rank() != 0) return;
    const double step = (o->step_mb > 0 ? o->step_mb : o->mb) * 1e6;
    // Published line rates; latencies as docs/PERFORMANCE.md gives their sources.
    struct Link {
      const char* name;
      double alpha_s, beta_bytes_s;
    };
    const Link links[] = {{"loopback (measured)", alpha, beta}, {"10 GbE", 50e-6, 1.25e9}, {"Thunderbolt 5", 50e-6, 10e9}};
    if (o->json) {
      std::printf("{\"ranks\": %d, \"transport\": \"%s\", \"alpha_us\": %.2f, \"sum_mb\": %.1f, \"sum_ms\": %.3f, \"beta_gbps\": %.3f, "
                  "\"step_mb\": %.1f, \"projection_ms\": {",
                  n, c->describe().c_str(), alpha * 1e6, o->mb, t * 1e3, beta / 1e9, step / 1e6);
      for (std::size_t l = 0; l < std::size(links); ++l)
        std::printf("%s\"%s\": [%.2f, %.2f, %.2f]", l ? ", " : "", links[l].name, projected(step, 2, links[l].alpha_s, links[l].beta_bytes_s) * 1e3,
                    projected(step, 4, links[l].alpha_s, links[l].beta_bytes_s) * 1e3, projected(step, 8, links[l].alpha_s, links[l].beta_bytes_s) * 1e3);
      std::printf("}}\n");
      return;
    }
    std::printf("%s: alpha %.2f us a message (a one-value sum over 2 (N - 1)); a %.0f MB sum %.2f ms, each rank moving %.0f MB: %.2f GB/s (beta)\n",
                c->describe().c_str(), alpha * 1e6, o->mb, t * 1e3, moved / 1e6, beta / 1e9);
    std::printf("projection (alpha-beta model, not a measurement) of a %.0f MB step's sum, ms at 2 / 4 / 8 ranks:\n", step / 1e6);
    for (const Link& l : links)
      std::printf("  %-20s alpha %6.1f us, beta %6.2f GB/s: %9.2f %9.2f %9.2f\n", l.name, l.alpha_s * 1e6, l.beta_bytes_s / 1e9,
                  projected(step, 2, l.alpha_s, l.beta_bytes_s) * 1e3, projected(step, 4, l.alpha_s, l.beta_bytes_s) * 1e3,
                  projected(step, 8, l.alpha_s, l.beta_bytes_s) * 1e3);
  });
}

}  // namespace orion::cli
