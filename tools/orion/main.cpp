// orion: the command-line program. Exit status: 0 success, 1 failure, 2 bad usage.
#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "dist/collective.h"
#include "runtime/supervisor.h"

int main(int argc, char** argv) {
  CLI::App app{"Orion: compile, run and train transformer models on the Apple Neural Engine,\n"
               "the CPU, and the ane-sim emulator."};
  app.set_version_flag("--version", std::string("orion ") + orion::cli::kOrionVersion);
  app.require_subcommand(1);
  orion::cli::add_init_command(app);
  orion::cli::add_convert_command(app);
  orion::cli::add_generate_command(app);
  orion::cli::add_chat_command(app);
  orion::cli::add_serve_command(app);
  orion::cli::add_tokenize_command(app);
  orion::cli::add_tokenizer_command(app);
  orion::cli::add_perplexity_command(app);
  orion::cli::add_bench_command(app);
  orion::cli::add_ops_command(app);
  orion::cli::add_rules_command(app);
  orion::cli::add_compile_command(app);
  orion::cli::add_inspect_command(app);
  orion::cli::add_train_command(app, orion::runtime::arguments(argc, argv));
  orion::cli::add_check_command(app);
  orion::cli::add_run_command(app);
  orion::cli::add_demo_command(app);
  orion::cli::add_data_command(app);
  orion::cli::add_plot_command(app);
  orion::cli::add_merge_lora_command(app);
  orion::cli::add_mil_command(app);
  orion::cli::add_doctor_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const orion::Error& e) {
    orion::dist::abort_job_if_ranked(e.what());  // one rank of several: the others must not wait
    std::fprintf(stderr, "orion: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    orion::dist::abort_job_if_ranked(e.what());
    std::fprintf(stderr, "orion: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
