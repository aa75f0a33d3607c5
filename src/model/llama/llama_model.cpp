#include "model/llama/llama_model.h"

#include <filesystem>

#include "core/error.h"
#include "core/memory_limit.h"
#include "model/formats/checkpoint.h"
#include "core/random.h"
#include "model/llama/gated_delta.h"
#include "model/llama/llama.h"
#include "model/formats/safetensors.h"
#include "model/formats/stored_weights.h"
#include "model/formats/folder_files.h"

namespace orion::model {

namespace {

// Buffers older checkpoints carry that the model computes itself, and a head saved beside a
// tied embedding.
bool is_known_llama_extra(std::string_view name) {
  return name.ends_with(".self_attn.rotary_emb.inv_freq") || name == "lm_head.weight";
}

}  // namespace

ParamShapes llama_param_shapes(const LlamaConfig& config) {
  return graph_param_shapes(llama_graph(config, {.seq = 1, .past = 0, .last_only = true}));
}

LlamaModel LlamaModel::from_weights(LlamaConfig config, TensorMap weights, std::string source, const ParamFilter& keep) {
  config.validate(source);
  check_named_weights(weights, kept_params(llama_param_shapes(config), keep), source);
  if (keep) std::erase_if(weights, [&](const auto& kv) { return !keep(kv.first); });
  LlamaModel m;
  m.config_ = std::move(config);
  m.weights_ = std::move(weights);
  m.dir_ = std::move(source);
  return m;
}

LlamaModel LlamaModel::load(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  return load(dir, read_llama_config(model_config_path(dir)));
}

LlamaModel LlamaModel::load(const std::string& dir, LlamaConfig config, const ParamFilter& keep) {
  // Before anything is mapped or widened: Orion holds float weights as f32 (a quantized folder's
  // are mapped as they are, and widened only where asked).
  const ParamShapes params = llama_param_shapes(config);
  if (!config.quantization) {
    std::int64_t count = 0;
    for (const auto& [name, shape] : kept_params(params, keep)) count += shape_numel(shape);
    const auto bytes = static_cast<std::uint64_t>(count) * sizeof(float);
    check_fits_in_memory(bytes, "the weights as f32", model_config_path(dir));
  }
  const Checkpoint checkpoint = Checkpoint::open(dir);
  for (const SafetensorsFile& file : checkpoint.files())
    if (const std::optional<StoredFormat> format = read_stored_format(file))
      throw Error::in_file(file.path(), "is stored as " + stored_format_name(*format) +
                                            " (orion convert), which only GPT-2 models support so far");
  LlamaModel m;
  const bool multimodal = config.multimodal_checkpoint;
  const auto known_extra = [multimodal](std::string_view name) {
    return is_known_llama_extra(name) || (multimodal && (name.starts_with("model.visual.") || name.starts_with("mtp.")));
  };
  const NamePrefix prefix = multimodal ? NamePrefix("model.", "model.language_model.") : NamePrefix();
  m.weights_ = read_named_weights(checkpoint, params, prefix, known_extra, config.model_type,
                                  config.quantization ? &*config.quantization : nullptr, &m.quantized_, keep);
  m.config_ = std::move(config);
  m.dir_ = dir;
  return m;
}

const TensorMap& LlamaModel::weights() const {
  if (quantized_.empty()) return weights_;
  std::lock_guard lock(widened_->mutex);
  if (!widened_->all) {
    const auto bytes = static_cast<std::uint64_t>(config_.parameter_count()) * sizeof(float);
    check_fits_in_memory(bytes, "the quantized weights widened to f32", dir_);
    TensorMap all = weights_;
    for (const auto& [name, m] : quantized_) all.emplace(name, dequantize(m));
    widened_->all = std::move(all);
  }
  return *widened_->all;
}

Tensor LlamaModel::weight(const std::string& name) const {
  if (auto it = quantized_.find(name); it != quantized_.end()) return dequantize(it->second);
  if (auto it = weights_.find(name); it != weights_.end()) return it->second;
  throw Error::in_file(dir_, "the model has no tensor " + name);
}

ir::Graph LlamaModel::decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const {
  return llama_graph(config_, {.seq = seq, .past = past, .last_only = last_only});
}

ir::Graph LlamaModel::ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences, double residual_scale) const {
  return llama_graph(config_, {.seq = seq, .past = past, .ane_form = true, .sequences = sequences, .residual_scale = residual_scale});
}

std::optional<CausalLm::RecurrentState> LlamaModel::recurrent_state(std::int64_t layer) const {
  if (!config_.linear_layer(layer)) return std::nullopt;
  return RecurrentState{gated_delta_conv_shape(config_), gated_delta_state_shape(config_)};
}

std::set<std::string, std::less<>> LlamaModel::ane_host_nodes(const ir::Graph& graph) const {
  std::set<std::string, std::less<>> host;
  if (!config_.linear_layers.empty()) host = gated_delta_host_nodes(graph);
  if (config_.attn_output_gate) {
    const std::string scope = std::string(".") + kGateSplitScope + ".";
    for (ir::ValueId id = 0; id < graph.size(); ++id)
      if (graph.node(id).name.find(scope) != std::string::npos) host.insert(graph.node(id).name);
  }
  return host;
}

std::optional<std::int32_t> LlamaModel::bos_token_id() const {
  if (!config_.bos_token_id) return std::nullopt;
  return static_cast<std::int32_t>(*config_.bos_token_id);
}

std::vector<std::int32_t> LlamaModel::stop_ids() const {
  return {config_.eos_token_ids.begin(), config_.eos_token_ids.end()};
}

TensorMap llama_init_weights(const LlamaConfig& config, std::uint64_t seed) {
  Rng rng(seed);
  TensorMap params;
  // In the graph's param order, so a seed gives the same tensors whatever the map's order.
  for (const auto& [name, shape] : llama_param_shapes(config)) {
    Tensor t(DType::f32, shape);
    auto v = t.span<float>();
    // Biases and Qwen3's q/k norm gains are drawn, not zero and one as Hugging Face's init has
    // them: a model made for tests should not let a wrong use of them pass.
    if (name.ends_with(".bias")) {
      rng.fill_normal(v, 0.0f, 0.02f);
    } else if (name.ends_with(".linear_attn.norm.weight")) {
      rng.fill_normal(v, 1.0f, 0.1f);  // the gated norm's gain is the weight itself, around 1
    } else if (name.ends_with(".conv1d.weight")) {
      rng.fill_normal(v, 0.0f, 0.5f);  // about torch's default for a 4-tap depthwise convolution (1/sqrt(4))
    } else if (name.ends_with(".A_log") || name.ends_with(".dt_bias")) {
      rng.fill_normal(v, 0.0f, 0.5f);  // decays e^g of e^-(0.2 to 5) * softplus(...): fast and slow heads
    } else if (name.ends_with("q_norm.weight") || name.ends_with("k_norm.weight")) {
      rng.fill_normal(v, config.norm_plus_one ? 0.0f : 1.0f, 0.1f);
    } else if (shape.size() == 1 && config.norm_plus_one) {
      rng.fill_normal(v, 0.0f, 0.1f);  // Gemma's gains are 1 + w: drawn around 0, so that w and 1 + w differ
    } else if (shape.size() == 1) {
      std::fill(v.begin(), v.end(), 1.0f);  // RMSNorm gains
    } else {
      rng.fill_normal(v, 0.0f, 0.02f);
    }
    params.emplace(name, std::move(t));
  }
  return params;
}

}  // namespace orion::model
