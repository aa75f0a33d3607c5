// The model behind `orion bench decode` and `orion bench prefill` (bench_commands.h).
#include "bench_commands.h"
#include "model/model_folder.h"

namespace orion::cli {

model::AnyModel bench_any_model(const std::string& arch, const std::string& model_dir, std::uint64_t seed) {
  if (!model_dir.empty()) return std::move(model::ModelFolder::load(model_dir).model);
  if (arch == "stories110m") {
    const model::LlamaConfig c = model::stories110m_config();
    return model::LlamaModel::from_weights(c, model::llama_init_weights(c, seed), arch);
  }
  model::Gpt2Config c;  // GPT-2 124M: the defaults
  return model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, seed), arch);
}

}  // namespace orion::cli
