#pragma once
// Each subcommand lives in its own file and registers itself on the app here. A subcommand's
// callback does the work; errors are orion::Error, which main() prints on one line (exit 1).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace orion::cli {

// What `orion --version` prints after "orion ", and `orion doctor` reports.
inline constexpr const char* kOrionVersion = "0.1.0";

void add_ops_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_init_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_rules_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_data_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_merge_lora_command(CLI::App& app);
void add_mil_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
// `argv`: the process's arguments, which a restart on an ANE device exec's again with --resume.
void add_train_command(CLI::App& app, std::vector<std::string> argv);

}  // namespace orion::cli
