#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "model/any_model.h"

namespace orion::cli {

void add_bench_tokenize_command(CLI::App& bench);
void add_bench_decode_command(CLI::App& bench);
void add_bench_prefill_command(CLI::App& bench);
void add_bench_kernels_command(CLI::App& bench);
void add_bench_train_command(CLI::App& bench);
void add_bench_serve_command(CLI::App& bench);
void add_bench_reduce_command(CLI::App& bench);
void add_bench_constrain_command(CLI::App& bench);

// The model the decode and prefill benches run: the folder `model_dir` (GPT-2 or Llama) when
// given, else randomly initialised weights (`seed`) of `arch`'s shapes (gpt2-124m or
// stories110m).
model::AnyModel bench_any_model(const std::string& arch, const std::string& model_dir, std::uint64_t seed);

// A shared VM's limits (read bandwidth, FMA rate) move a lot within seconds (docs/PERFORMANCE.md,
// "Machines"), so the decode and prefill benches measure theirs before the first timed run and after every
// run: probes[i] and probes[i + 1] bracket run i. Each run's fraction is what it achieved
// against the mean of the two probes around it. Throws orion::Error unless probes has one
// more entry than achieved.
std::vector<double> fractions_of_limit(const std::vector<double>& achieved, const std::vector<double>& probes);

// The benches' line for a process under an emulator (core/emulation.h), printed first, or ""
// when it runs natively: emulated figures say nothing about any hardware.
std::string emulation_notice();

}  // namespace orion::cli
