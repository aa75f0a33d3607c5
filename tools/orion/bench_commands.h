#pragma once
#include <CLI/CLI.hpp>

namespace orion::cli {

void add_bench_tokenize_command(CLI::App& bench);
void add_bench_decode_command(CLI::App& bench);
void add_bench_prefill_command(CLI::App& bench);
void add_bench_kernels_command(CLI::App& bench);
void add_bench_train_command(CLI::App& bench);

}  // namespace orion::cli
