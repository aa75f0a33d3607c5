// orion init: a new model folder in Hugging Face's layout (GPT-2 or Llama), with seeded random
// weights (the architecture's own initialisation) and tokenizer files. How tests get models,
// and how users start training from scratch (model/model_init.h does the work).
#include <cstdio>

#include "architecture_options.h"
#include "commands.h"

namespace orion::cli {

void add_init_command(CLI::App& app) {
  auto o = std::make_shared<model::InitOptions>();
  auto* cmd = app.add_subcommand("init", "Write a new model folder with seeded random weights (Hugging Face layout)");
  cmd->add_option("-o,--out", o->out, "Model folder to write")->required();
  CLI::Option* arch = add_architecture_options(*cmd, *o);
  cmd->add_option("--seed", o->seed, "Seed of the weights")->capture_default_str();
  cmd->add_flag("--force", o->force, "Replace an existing model in the folder (the folder is written as a whole)");
  cmd->callback([o, arch, cmd] {
    o->arch_given = arch->count() > 0;
    for (const CLI::Option* opt : cmd->get_options())
      if (opt->count() > 0) o->given.insert(opt->get_name());
    std::printf("%s\n", model::init_model(*o).c_str());
  });
}

}  // namespace orion::cli
