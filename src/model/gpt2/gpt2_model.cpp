#include "model/gpt2/gpt2_model.h"

#include <filesystem>

#include "core/error.h"
#include "core/memory_limit.h"
#include "model/gpt2/gpt2.h"
#include "model/formats/named_weights.h"
#include "model/formats/safetensors.h"
#include "model/formats/folder_files.h"

namespace orion::model {

namespace {

// Buffers that Hugging Face checkpoints carry but the model computes itself.
bool is_known_gpt2_extra(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") || name == "lm_head.weight";
}

}  // namespace

Gpt2Model Gpt2Model::from_weights(Gpt2Config config, TensorMap weights, std::string source) {
  config.validate(source);
  check_named_weights(weights, gpt2_param_shapes(config), source);
  Gpt2Model m;
  m.config_ = std::move(config);
  m.graph_->weights = std::move(weights);
  m.dir_ = std::move(source);
  return m;
}

const TensorMap& Gpt2Model::weights() const {
  if (stored_) std::call_once(graph_->made, [this] { graph_->weights = stored_->graph_weights(); });
  return graph_->weights;
}

Gpt2Model Gpt2Model::load(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  return load(dir, read_gpt2_config(model_config_path(dir)));
}

Gpt2Model Gpt2Model::load(const std::string& dir, Gpt2Config config) {
  const std::string config_path = model_config_path(dir);
  const std::string weights_path = model_weights_path(dir);
  // Before anything is mapped or widened: one byte per weight is the least any format stores.
  check_fits_in_memory(config.weight_bytes(1), "the weights", config_path);
  const SafetensorsFile file = SafetensorsFile::open(weights_path);

  const auto params = gpt2_param_shapes(config);
  Gpt2Model m;
  m.config_ = std::move(config);
  m.dir_ = dir;
  if (const std::optional<StoredFormat> format = read_stored_format(file)) {
    m.stored_ = std::make_shared<const StoredWeights>(StoredWeights::open(file, *format, params));
    return m;
  }

  // Checkpoints saved from GPT2LMHeadModel prefix every name with "transformer.".
  std::string prefix;
  if (!file.find("wte.weight") && file.find("transformer.wte.weight")) prefix = "transformer.";

  // Hugging Face's layout is used as f32 (f16 and bf16 widened): that much must fit.
  check_fits_in_memory(m.config_.weight_bytes(sizeof(float)), "the weights as f32", config_path);
  TensorMap weights = read_named_weights(Checkpoint::single(file), params, prefix, is_known_gpt2_extra, "GPT-2");
  m.graph_->weights = std::move(weights);
  return m;
}

ir::Graph Gpt2Model::decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const {
  return gpt2_graph(config_, {.seq = seq, .past = past, .last_only = last_only});
}

ir::Graph Gpt2Model::ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences, double residual_scale) const {
  if (residual_scale != 1) throw Error("gpt2: the ANE form scales no residual stream (a Llama-family model's does)");
  return gpt2_graph(config_, {.seq = seq, .past = past, .ane_form = true, .sequences = sequences});
}

std::vector<std::pair<std::string, Shape>> gpt2_param_shapes(const Gpt2Config& config) {
  return graph_param_shapes(gpt2_graph(config, {1, 0, true}));
}

TensorMap gpt2_init_weights(const Gpt2Config& config, std::uint64_t seed) {
  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  Rng rng(seed);
  return gpt2_init_params(g, static_cast<int>(config.n_layer), rng);
}

}  // namespace orion::model
