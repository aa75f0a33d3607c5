// orion merge-lora: a model folder with a LoRA adapter merged into its weights
// (model/lora/lora_model.h), which any tool then runs as an ordinary model.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/stopwatch.h"
#include "model/lora/lora_model.h"
#include "model/model_folder.h"

namespace orion::cli {

void add_merge_lora_command(CLI::App& app) {
  struct Opts {
    std::string model_dir, lora, out;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("merge-lora", "Write a model folder with a LoRA adapter merged into the weights");
  cmd->add_option("-m,--model", o->model_dir, "The base model folder the adapter was trained on")->required();
  cmd->add_option("--lora", o->lora, "The adapter folder (adapter_config.json + adapter_model.safetensors)")->required();
  cmd->add_option("-o,--out", o->out, "The merged model folder to write")->required();
  cmd->add_flag("--force", o->force, "Replace an existing output folder");
  cmd->callback([o] {
    Stopwatch sw;
    const model::ModelFolder md = model::ModelFolder::load(o->model_dir);
    const model::LoraAdapter adapter = model::read_lora_adapter(o->lora, md.lm());
    const int layers = model::write_merged_model(md, adapter, o->out, o->force);
    std::printf("wrote %s: %s with the LoRA adapter %s (rank %d, alpha %g) merged into %d layers, in %.1f s\n",
                o->out.c_str(), o->model_dir.c_str(), o->lora.c_str(), adapter.config.rank, adapter.config.alpha, layers,
                sw.seconds());
  });
}

}  // namespace orion::cli
