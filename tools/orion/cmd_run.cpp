// orion run: execute an IR text file on the CPU with seeded random inputs and params.
#include <cstdio>

#include "commands.h"
#include "core/stopwatch.h"
#include "exec/cpu/executor.h"
#include "ir/parser.h"
#include "numerics_option.h"
#include "random_bindings.h"
#include "tensor_summary.h"

namespace orion::cli {

void add_run_command(CLI::App& app) {
  struct Opts {
    std::string file;
    std::string numerics = "f32";
    std::uint64_t seed = 0;
    int threads = 0;
    int repeat = 1;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("run", "Run an IR text file on the CPU with seeded random inputs and params");
  cmd->add_option("file", o->file, "IR text file")->required();
  add_numerics_option(cmd, o->numerics);
  cmd->add_option("--seed", o->seed, "Seed of the random inputs and params")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Runs to time (the median is reported)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->callback([o] {
    ir::Graph g = ir::read_graph_file(o->file);
    const TensorMap bindings = random_bindings(g, o->seed);
    exec::CpuOptions opts;
    opts.numerics = parse_numerics(o->numerics);
    opts.threads = o->threads;
    exec::CpuExecutor ex(std::move(g), opts);
    std::vector<double> ms;
    std::vector<Tensor> outs;
    for (int i = 0; i < o->repeat; ++i) {
      Stopwatch sw;
      outs = ex.run(bindings);
      ms.push_back(sw.ms());
    }
    const ir::Graph& graph = ex.graph();
    for (std::size_t i = 0; i < outs.size(); ++i)
      std::printf("%%%s = %s\n", graph.node(graph.outputs()[i]).name.c_str(), summarize(outs[i]).c_str());
    std::fprintf(stderr, "ran %s in %s numerics: median %.3f ms over %d runs\n", o->file.c_str(),
                 o->numerics.c_str(), median(ms), o->repeat);
  });
}

}  // namespace orion::cli
