#include "model/gpt2_model.h"

#include <filesystem>

#include "core/error.h"
#include "model/gpt2.h"
#include "model/safetensors.h"

namespace orion::model {

namespace {

// Buffers that Hugging Face checkpoints carry but the model computes itself.
bool is_known_extra(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") || name == "lm_head.weight";
}

// The params the graphs read, with their types: those of a one-token prefill graph.
std::vector<const ir::Node*> graph_params(const ir::Graph& g) {
  std::vector<const ir::Node*> out;
  for (ir::ValueId id : g.nodes_of(ir::Op::param)) out.push_back(&g.node(id));
  return out;
}

}  // namespace

Gpt2Model Gpt2Model::from_weights(Gpt2Config config, exec::Bindings weights, std::string source) {
  config.validate(source);
  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  for (const ir::Node* p : graph_params(g)) {
    auto it = weights.find(p->name);
    if (it == weights.end()) throw Error::in_file(source, "tensor " + p->name + " is missing");
    if (it->second.shape() != p->type.shape)
      throw Error::in_file(source, "tensor " + p->name + " has shape " + shape_str(it->second.shape()) +
                                       ", the config needs " + shape_str(p->type.shape));
  }
  Gpt2Model m;
  m.config_ = std::move(config);
  m.weights_ = std::move(weights);
  m.dir_ = std::move(source);
  return m;
}

Gpt2Model Gpt2Model::load(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  Gpt2Config config = read_gpt2_config(config_path);
  const SafetensorsFile file = SafetensorsFile::open(weights_path);

  // Checkpoints saved from GPT2LMHeadModel prefix every name with "transformer.".
  std::string prefix;
  if (!file.find("wte.weight") && file.find("transformer.wte.weight")) prefix = "transformer.";

  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  exec::Bindings weights;
  for (const ir::Node* p : graph_params(g)) {
    const std::string name = prefix + p->name;
    const SafetensorsEntry* e = file.find(name);
    if (!e) throw Error::in_file(weights_path, "tensor " + name + " is missing");
    if (e->shape != p->type.shape)
      throw Error::in_file(weights_path, "tensor " + name + " has shape " + shape_str(e->shape) +
                                             ", config.json needs " + shape_str(p->type.shape));
    if (!is_float(e->dtype))
      throw Error::in_file(weights_path, "tensor " + name + " has dtype " + std::string(dtype_name(e->dtype)) +
                                             ", expected a float type");
    // f32 stays a zero-copy view of the mapping; f16 and bf16 are widened once here.
    weights.emplace(p->name, file.tensor_as(name, DType::f32));
  }
  for (const SafetensorsEntry& e : file.entries()) {
    std::string_view n = e.name;
    if (n.starts_with(prefix)) n.remove_prefix(prefix.size());
    if (!weights.contains(n) && !is_known_extra(n))
      throw Error::in_file(weights_path, "tensor " + e.name + " is not part of a GPT-2 model with this config");
  }
  Gpt2Model m;
  m.config_ = std::move(config);
  m.weights_ = std::move(weights);
  m.dir_ = dir;
  return m;
}

exec::Bindings gpt2_init_weights(const Gpt2Config& config, std::uint64_t seed) {
  const ir::Graph g = gpt2_graph(config, {1, 0, true});
  Rng rng(seed);
  return gpt2_init_params(g, static_cast<int>(config.n_layer), rng);
}

}  // namespace orion::model
