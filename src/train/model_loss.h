#pragma once
// The loss graph the trainer takes (train/trainer.h's LossGraphFn), for each architecture and
// for any loaded model: the batched training graph of model/gpt2/gpt2.h or model/llama/llama.h (tokens,
// positions and targets in, the mean cross-entropy `loss` out). The one place training
// dispatches on architecture.
#include "model/any_model.h"
#include "model/lora/lora_config.h"
#include "model/quantized_graph.h"
#include "train/trainer.h"

namespace orion::train {

LossGraphFn model_loss_graph(const model::Gpt2Config& config);
LossGraphFn model_loss_graph(const model::LlamaConfig& config);
LossGraphFn model_loss_graph(const model::AnyModel& model);
// The same loss in ops the ANE compiler lowers (model/decoder_graph.h's ane_form), one window
// at a time (batch must be 1): what device runners differentiate (train/device_gradients.h).
LossGraphFn model_ane_loss_graph(const model::Gpt2Config& config);
LossGraphFn model_ane_loss_graph(const model::LlamaConfig& config);
LossGraphFn model_ane_loss_graph(const model::AnyModel& model);

// The frozen base of LoRA: a float folder's weights; an MLX quantized folder's float ones and its
// matrices as stored (QLoRA: never widened whole, model/quantized_graph.h).
struct FrozenBase {
  TensorMap floats;
  model::QuantizedMatrices quantized;
  std::size_t chunk_bytes = model::kWidenedChunkBytes;  // model::bind_quantized's
};
FrozenBase frozen_base(const model::AnyModel& model);

// LoRA: `loss` with the low-rank path on the modules `config` targets (model/lora/lora_graph.h)
// and every other weight bound from `frozen` as a constant, so that the graph's only params are
// the adapters: the trainer trains nothing else, the CPU reads the base weights in place, and a
// device bakes them into its kernels once while the adapters are its kernel inputs.
LossGraphFn lora_loss_graph(const LossGraphFn& loss, const FrozenBase& frozen, const model::LoraConfig& config);

}  // namespace orion::train
