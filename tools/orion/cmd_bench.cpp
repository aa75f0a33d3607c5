// orion bench: benchmarks, each a subcommand in its own bench_*.cpp file. Figures are
// measured here, never assumed; see docs/PERFORMANCE.md for recorded runs.
#include "bench_commands.h"
#include "commands.h"

namespace orion::cli {

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (median of repeated runs)");
  bench->require_subcommand(1);
  add_bench_decode_command(*bench);
  add_bench_prefill_command(*bench);
  add_bench_train_command(*bench);
  add_bench_serve_command(*bench);
  add_bench_tokenize_command(*bench);
  add_bench_kernels_command(*bench);
  add_bench_reduce_command(*bench);
  add_bench_constrain_command(*bench);
}

}  // namespace orion::cli
