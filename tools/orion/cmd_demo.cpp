// orion demo: the main job on the default that ships with the repository. Build one GPT-2
// transformer block as an IR graph, run it on the CPU in f32 and in the ANE's f16 numerics,
// compile it for the ANE (passes, validator, MIL + weight blob) and run the compiled program on
// ane-sim; then compile a whole small GPT-2 into an ANE package and run prefill and decode
// steps on ane-sim (demo_package.h). Report outputs, timing and how far each result is from f32.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "demo_package.h"
#include "compile/driver.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "device/ane_packing.h"
#include "runtime/device_factory.h"
#include "exec/cpu/executor.h"
#include "ir/printer.h"
#include "model/gpt2/gpt2_block.h"
#include "tensor_summary.h"

namespace orion::cli {

namespace {

struct DemoOpts {
  model::Gpt2BlockShape shape;
  std::uint64_t seed = 0;
  int threads = 0;
  int repeat = 5;
  std::string save;
};

struct RunResult {
  Tensor y;
  double median_ms = 0;
};

RunResult run_block(const ir::Graph& g, const TensorMap& bindings, exec::Numerics numerics,
                    const DemoOpts& o) {
  exec::CpuExecutor ex(g, {numerics, o.threads});
  std::vector<double> ms;
  RunResult r;
  for (int i = 0; i < o.repeat; ++i) {
    Stopwatch sw;
    r.y = ex.run(bindings).at(0);
    ms.push_back(sw.ms());
  }
  r.median_ms = median(ms);
  return r;
}

// The block compiled for the ANE and run on ane-sim, the way the device would get it: lowered
// and validated, written as model.mil + weights/weight.bin into a temporary folder, compiled
// from that folder (through the MIL parser), evaluated on packed fp16 surfaces.
void run_on_ane_sim(const ir::Graph& g, const TensorMap& bindings, const Tensor& x, const Tensor& want,
                    const DemoOpts& o) {
  TensorMap params;
  for (const auto& [name, t] : bindings)
    if (name != "x") params.emplace(name, t);
  const TempFolder dir("orion-demo");  // removed with its files whatever happens below
  Stopwatch sw;
  const compile::BuiltKernel built = compile::build_kernel(g, params, dir.path());
  const double compile_ms = sw.ms();
  const compile::AneLowered& k = built.lowered;
  const compile::MilProgram& program = built.mil;
  const std::unique_ptr<device::AneDevice> device =
      runtime::open_device(runtime::ane_sim_options(o.threads == 0 ? 2 : o.threads));
  device::AneDevice& sim = *device;
  const device::AneProgramId id = sim.compile(dir.path());
  sim.load(id);
  device::AneSurface in(static_cast<std::size_t>(k.io.input_bytes)), out(static_cast<std::size_t>(k.io.output_bytes));
  std::vector<double> ms;
  for (int i = 0; i < o.repeat; ++i) {
    Stopwatch run;
    device::pack_token_major(x, k.io.padded_seq, in);
    sim.evaluate(id, {&in}, {&out});
    ms.push_back(run.ms());
  }
  sim.unload(id);
  const Tensor y = device::unpack_token_major(out, o.shape.dim, o.shape.seq, k.io.padded_seq);
  std::printf("ane compile: %d ops in ANE form, sequence padded %lld -> %lld, %zu lines of MIL, %zu-byte weight blob, "
              "%zu rule warnings, %.0f ms\n",
              k.graph.size(), static_cast<long long>(o.shape.seq), static_cast<long long>(k.io.padded_seq),
              static_cast<std::size_t>(std::count(program.text.begin(), program.text.end(), '\n')),
              program.weights.bytes().size(), k.warnings.size(), compile_ms);
  std::printf("ane-sim (fp16, the ANE's rules): y = %s\n", summarize(y).c_str());
  std::printf("  median %.3f ms over %d runs (an emulator: the time says nothing of the ANE's)\n", median(ms), o.repeat);
  std::printf("ane-sim against f32: relative RMS error %.3g\n", relative_rms(want, y));
}

void demo(const DemoOpts& o) {
  const auto& s = o.shape;
  const ir::Graph g = model::gpt2_block_graph(s);
  if (!o.save.empty()) write_file_atomic(o.save, ir::print_graph(g));

  Rng rng(o.seed);
  TensorMap bindings = model::gpt2_init_params(g, 1, rng);
  std::int64_t n_params = 0;
  for (const auto& [name, t] : bindings) n_params += t.numel();
  Tensor x(DType::f32, {s.seq, s.dim});
  rng.fill_normal(x.span<float>(), 0.0f, 1.0f);
  bindings.emplace("x", x);

  std::printf("Orion demo: one GPT-2 transformer block, seq %lld, dim %lld, heads %lld, %lld params\n",
              static_cast<long long>(s.seq), static_cast<long long>(s.dim),
              static_cast<long long>(s.heads), static_cast<long long>(n_params));
  exec::CpuExecutor probe(g, {exec::Numerics::f32, o.threads});
  const auto& plan = probe.memory_plan();
  std::printf("graph: %d nodes; memory plan: %zu buffers, %.2f MiB (%.2f MiB without reuse)\n",
              g.size(), plan.slot_bytes.size(), static_cast<double>(plan.planned_bytes) / (1 << 20),
              static_cast<double>(plan.unplanned_bytes) / (1 << 20));

  const double gflop = 2.0 * static_cast<double>(model::gpt2_block_macs(s)) * 1e-9;
  const RunResult f32 = run_block(g, bindings, exec::Numerics::f32, o);
  const RunResult f16 = run_block(g, bindings, exec::Numerics::f16, o);
  for (const auto* r : {&f32, &f16}) {
    const char* name = r == &f32 ? "f32" : "f16";
    std::printf("cpu %s numerics: y = %s\n", name, summarize(r->y).c_str());
    std::printf("  median %.3f ms over %d runs, %.2f GFLOP/s\n", r->median_ms, o.repeat,
                gflop / (r->median_ms * 1e-3));
  }
  const std::vector<float> a = f32.y.to_floats(), b = f16.y.to_floats();
  double max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) max_abs = std::max(max_abs, std::abs(static_cast<double>(a[i]) - b[i]));
  std::printf("f16 against f32: max abs diff %.3g, relative RMS error %.3g\n", max_abs, relative_rms(f32.y, f16.y));
  run_on_ane_sim(g, bindings, x, f32.y, o);
  if (!o.save.empty()) std::printf("graph written to %s\n", o.save.c_str());
  demo_package({.seed = o.seed, .threads = o.threads});
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto o = std::make_shared<DemoOpts>();
  auto* cmd = app.add_subcommand(
      "demo", "Build a GPT-2 transformer block, run it on the CPU in f32 and f16 numerics, compile it for the ANE "
              "and run that on ane-sim; then compile a whole small GPT-2 for the ANE and run prefill and decode on "
              "ane-sim; report timing and errors");
  cmd->add_option("--seq", o->shape.seq, "Tokens in the window")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--dim", o->shape.dim, "Model width")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--heads", o->shape.heads, "Attention heads")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of weights and input")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Timed runs per numerics mode")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--save", o->save, "Also write the block's graph in IR text form to this file");
  cmd->callback([o] { demo(*o); });
}

}  // namespace orion::cli
