#include "model/gpt2_model.h"

#include <filesystem>

#include "core/error.h"
#include "core/memory_limit.h"
#include "model/gpt2.h"
#include "model/safetensors.h"

namespace orion::model {

namespace {

// Buffers that Hugging Face checkpoints carry but the model computes itself.
bool is_known_extra(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") || name == "lm_head.weight";
}

}  // namespace

Gpt2Model Gpt2Model::from_weights(Gpt2Config config, exec::Bindings weights, std::string source) {
  config.validate(source);
  for (const auto& [name, shape] : gpt2_param_shapes(config)) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error::in_file(source, "tensor " + name + " is missing");
    if (it->second.shape() != shape)
      throw Error::in_file(source, "tensor " + name + " has shape " + shape_str(it->second.shape()) +
                                       ", the config needs " + shape_str(shape));
  }
  Gpt2Model m;
  m.config_ = std::move(config);
  m.graph_->weights = std::move(weights);
  m.dir_ = std::move(source);
  return m;
}

const exec::Bindings& Gpt2Model::weights() const {
  if (stored_) std::call_once(graph_->made, [this] { graph_->weights = stored_->graph_weights(); });
  return graph_->weights;
}

Gpt2Model Gpt2Model::load(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  Gpt2Config config = read_gpt2_config(config_path);
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
  exec::Bindings weights;
  for (const auto& [pname, shape] : params) {
    const std::string name = prefix + pname;
    const SafetensorsEntry* e = file.find(name);
    if (!e) throw Error::in_file(weights_path, "tensor " + name + " is missing");
    if (e->shape != shape)
      throw Error::in_file(weights_path, "tensor " + name + " has shape " + shape_str(e->shape) +
                                             ", config.json needs " + shape_str(shape));
    if (!is_float(e->dtype))
      throw Error::in_file(weights_path, "tensor " + name + " has dtype " + std::string(dtype_name(e->dtype)) +
                                             ", expected a float type");
    // f32 stays a zero-copy view of the mapping; f16 and bf16 are widened once here.
    weights.emplace(pname, file.tensor_as(name, DType::f32));
  }
  for (const SafetensorsEntry& e : file.entries()) {
    std::string_view n = e.name;
    if (n.starts_with(prefix)) n.remove_prefix(prefix.size());
    if (!weights.contains(n) && !is_known_extra(n))
      throw Error::in_file(weights_path, "tensor " + e.name + " is not part of a GPT-2 model with this config");
  }
  m.graph_->weights = std::move(weights);
  return m;
}

std::vector<std::pair<std::string, Shape>> gpt2_param_shapes(const Gpt2Config& config) {
  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  std::vector<std::pair<std::string, Shape>> out;
  for (ir::ValueId id : g.nodes_of(ir::Op::param)) out.emplace_back(g.node(id).name, g.node(id).type.shape);
  return out;
}

exec::Bindings gpt2_init_weights(const Gpt2Config& config, std::uint64_t seed) {
  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  Rng rng(seed);
  return gpt2_init_params(g, static_cast<int>(config.n_layer), rng);
}

}  // namespace orion::model
