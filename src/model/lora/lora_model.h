#pragma once
// A LoRA adapter on a loaded model: read against the model (model/lora/lora_adapter.h checks
// it fits), and merged into a copy of its weights, which is how the CPU engines run an adapter
// and what `orion merge-lora` writes.
#include <string>

#include "model/any_model.h"
#include "model/lora/lora_adapter.h"
#include "model/model_folder.h"

namespace orion::model {

// The graph whose linear layers adapters attach to (its params are all the model's weights).
ir::Graph lora_base_graph(const CausalLm& lm);

// DIR as an adapter of `lm`; errors name the file and what does not fit.
LoraAdapter read_lora_adapter(const std::string& dir, const CausalLm& lm);

// The model with the adapter merged into its weights (in memory, f32).
AnyModel merged_model(const AnyModel& base, const LoraAdapter& adapter);

// Writes the model folder `out` (config.json, model.safetensors, the tokenizer) of `md`'s model
// with `adapter` merged, as a whole. Refuses an existing `out` unless `replace`, and `out` being
// the base model's or the adapter's own folder. Returns the number of weights changed.
int write_merged_model(const ModelFolder& md, const LoraAdapter& adapter, const std::string& out, bool replace);

}  // namespace orion::model
