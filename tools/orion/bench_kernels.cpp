// orion bench kernels PKG: every program of a compiled package run on ane-sim: per step the
// compile and load time (first run), the time per run, packing, and what the runner spends
// around them (dispatch). ane-sim is an emulator: its times measure the emulation and the
// runtime's own overhead, not the ANE's speed.
#include <cstdio>
#include <cstring>
#include <numeric>

#include "bench_commands.h"
#include "core/stopwatch.h"
#include "runtime/device_factory.h"
#include "runtime/package_runner.h"

namespace orion::cli {

namespace {

// Inputs of the program's declared shapes: token ids and positions counting up, floats zero
// (an open attention mask, an empty KV cache).
TensorMap bench_inputs(const compile::PackageProgram& p) {
  TensorMap in;
  for (const compile::PackageValue& v : p.inputs) {
    Tensor t(v.dtype, v.shape);
    std::memset(t.raw(), 0, t.nbytes());
    if (v.dtype == DType::i32)
      for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 16);
    in[v.name] = t;
  }
  return in;
}

}  // namespace

void add_bench_kernels_command(CLI::App& bench) {
  struct Opts {
    std::string package;
    int runs = 5, threads = 2;
    bool json = false, compile_on_use = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = bench.add_subcommand("kernels", "Run every program of an ANE package on ane-sim: per-kernel compile, load and run times");
  cmd->add_option("package", o->package, "Package folder (orion compile --target ane)")->required();
  cmd->add_option("--runs", o->runs, "Timed runs per program")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--threads", o->threads, "Emulator and host threads")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object per program");
  cmd->add_flag("--compile-on-use", o->compile_on_use,
                "Compile each kernel when the first run reaches it, not on the background compile thread");
  cmd->callback([o] {
    const compile::PackageManifest m = compile::read_manifest(o->package);
    const std::unique_ptr<device::AneDevice> sim =
        runtime::open_device(runtime::ane_sim_options(o->threads, m.target));
    runtime::PackageRunner runner(o->package, *sim, o->threads, nullptr, !o->compile_on_use);
    for (const compile::PackageProgram& p : m.programs) {
      const TensorMap in = bench_inputs(p);
      Stopwatch sw;
      runner.run(p.name, in);  // compiles and loads this program's kernels
      const double first_ms = sw.ms();
      const runtime::RunnerStats before = runner.stats();
      double compile_ms = 0, waited_ms = 0;
      for (const compile::PackageStep& s : p.steps) {
        compile_ms += before.steps.at(s.name).compile_ms;
        waited_ms += before.steps.at(s.name).compile_wait_ms;
      }
      std::vector<double> ms;
      for (int r = 0; r < o->runs; ++r) {
        sw.restart();
        runner.run(p.name, in);
        ms.push_back(sw.ms());
      }
      const runtime::RunnerStats& after = runner.stats();
      double steps_ms = 0;
      int kernels = 0;
      for (const compile::PackageStep& s : p.steps) {
        const runtime::StepStats& a = after.steps.at(s.name);
        const runtime::StepStats& b = before.steps.at(s.name);
        steps_ms += (a.run_ms - b.run_ms) + (a.pack_ms - b.pack_ms);
        kernels += s.placement == compile::Placement::ane;
      }
      const double per_run = median(ms);
      const double dispatch_ms = (std::accumulate(ms.begin(), ms.end(), 0.0) - steps_ms) / o->runs;
      if (o->json) {
        std::printf("{\"program\": \"%s\", \"kernels\": %d, \"first_run_ms\": %.2f, \"median_run_ms\": %.3f, "
                    "\"dispatch_ms_per_run\": %.3f, \"compiles\": %d, \"compile_ms\": %.2f, \"compile_wait_ms\": %.2f}\n",
                    p.name.c_str(), kernels, first_ms, per_run, dispatch_ms, after.compiles, compile_ms, waited_ms);
        continue;
      }
      std::printf("program %s: %zu steps (%d kernels); first run %.1f ms (compiles and loads %.1f ms, of which the run "
                  "waited %.1f ms), then median %.2f ms over %d runs; runtime overhead outside the steps %.3f ms per run\n",
                  p.name.c_str(), p.steps.size(), kernels, first_ms, compile_ms, waited_ms, per_run, o->runs, dispatch_ms);
      std::printf("  %-18s %-5s %16s %10s %12s\n", "step", "kind", "compile+load ms", "ms/run", "pack ms/run");
      for (const compile::PackageStep& s : p.steps) {
        const runtime::StepStats& a = after.steps.at(s.name);
        const runtime::StepStats& b = before.steps.at(s.name);
        const int n = a.runs - b.runs;
        std::printf("  %-18s %-5s %16.1f %10.3f %12.3f\n", s.name.c_str(), std::string(compile::placement_name(s.placement)).c_str(),
                    a.compile_ms, (a.run_ms - b.run_ms) / n, (a.pack_ms - b.pack_ms) / n);
      }
    }
    std::printf("ane-sim: %d compiles; its times are the emulator's, not the ANE's\n", sim->compiles());
  });
}

}  // namespace orion::cli
