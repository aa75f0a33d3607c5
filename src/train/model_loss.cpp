#include "train/model_loss.h"

#include "ir/transforms/bind_params.h"
#include "model/gpt2/gpt2.h"
#include "model/lora/lora_graph.h"
#include "model/llama/llama.h"
#include "model/quantized_graph.h"

namespace orion::train {

namespace {

constexpr model::DecoderGraphOptions training_options(std::int64_t batch, std::int64_t seq, bool ane_form = false) {
  return {.seq = seq, .past = 0, .last_only = false, .batch = batch, .loss = true, .ane_form = ane_form};
}

}  // namespace

LossGraphFn model_loss_graph(const model::Gpt2Config& config) {
  return [config](std::int64_t batch, std::int64_t seq) { return model::gpt2_graph(config, training_options(batch, seq)); };
}

LossGraphFn model_loss_graph(const model::LlamaConfig& config) {
  return [config](std::int64_t batch, std::int64_t seq) { return model::llama_graph(config, training_options(batch, seq)); };
}

LossGraphFn model_loss_graph(const model::AnyModel& model) {
  return std::visit([](const auto& m) { return model_loss_graph(m.config()); }, model);
}

LossGraphFn model_ane_loss_graph(const model::Gpt2Config& config) { return model_loss_graph(config); }  // already in ANE form

LossGraphFn model_ane_loss_graph(const model::LlamaConfig& config) {
  return [config](std::int64_t batch, std::int64_t seq) { return model::llama_graph(config, training_options(batch, seq, true)); };
}

LossGraphFn model_ane_loss_graph(const model::AnyModel& model) {
  return std::visit([](const auto& m) { return model_ane_loss_graph(m.config()); }, model);
}

FrozenBase frozen_base(const model::AnyModel& model) {
  if (const auto* llama = std::get_if<model::LlamaModel>(&model); llama && !llama->quantized().empty())
    return {llama->float_weights(), llama->quantized()};
  return {model::causal_lm(model).weights(), {}};
}

LossGraphFn lora_loss_graph(const LossGraphFn& loss, const FrozenBase& frozen, const model::LoraConfig& config) {
  return [loss, frozen, config](std::int64_t batch, std::int64_t seq) {
    ir::Graph g = model::with_lora(loss(batch, seq), config, config.scale());
    ir::bind_params(g, frozen.floats, {.require_all = false});
    return model::bind_quantized(g, frozen.quantized, frozen.chunk_bytes);
  };
}

}  // namespace orion::train
