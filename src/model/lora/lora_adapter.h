#pragma once
// A LoRA adapter: its config and its A and B matrices, and the folder it lives in, in PEFT's
// layout so that Hugging Face's tools read what Orion writes and the other way round:
//   adapter_config.json        peft_type "LORA", r, lora_alpha, target_modules, use_rslora, ...
//   adapter_model.safetensors  base_model.model.<module>.lora_A.weight [r, in]
//                              base_model.model.<module>.lora_B.weight [out, r]
// where <module> is the Hugging Face module's full name (GPT-2's under "transformer.").
// In memory the tensors are named as the graphs name them (model/lora/lora_graph.h).
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor_map.h"
#include "ir/graph.h"
#include "model/lora/lora_config.h"

namespace orion::model {

inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

struct LoraAdapter {
  LoraConfig config;
  TensorMap weights;  // f32, by graph names (lora_a_name, lora_b_name)
  std::string source;  // the folder it was read from, or "" for a new one
};

// A new adapter for the modules of `base` (a graph of the base model) that `config` targets,
// as PEFT initialises one: A uniform in +-1/sqrt(in) (nn.Linear's Kaiming-uniform), B zero, so
// that the adapted model starts as the base model. Seeded: the same seed gives the same bits.
LoraAdapter init_lora_adapter(const ir::Graph& base, const LoraConfig& config, std::uint64_t seed);

// adapter_config.json's text for `config` on an `arch` model read from `base_model`.
std::string lora_adapter_config_json(const LoraConfig& config, std::string_view arch, const std::string& base_model);
// The adapter's tensors under PEFT's names, and back (names that are not an adapter's of an
// `arch` model are an error naming `source`).
TensorMap to_peft_names(const TensorMap& weights, std::string_view arch);
TensorMap from_peft_names(const TensorMap& tensors, std::string_view arch, const std::string& source);

// Writes DIR/adapter_config.json and DIR/adapter_model.safetensors as one folder (replaced
// when it exists and `replace`).
void write_lora_adapter(const std::string& dir, const LoraAdapter& adapter, std::string_view arch,
                        const std::string& base_model, bool replace);

// Reads DIR as an adapter of the `arch` model whose graph is `base`, checking everything
// against it: PEFT options Orion does not implement (DoRA, biases, modules_to_save, per-module
// ranks), targets that name no layer of the model, tensors missing, extra or of the wrong
// shape. Errors name the file and the entry.
LoraAdapter read_lora_adapter(const std::string& dir, const ir::Graph& base, std::string_view arch);
// Checks adapter weights (by graph names) against the modules of `base` the config targets.
void check_lora_weights(const TensorMap& weights, const ir::Graph& base, const LoraConfig& config,
                        const std::string& source);

// The adapter's matrices as a device takes them at run time: A as it is, B times the scale, so
// that a kernel compiled for the rank and targets serves every adapter of them, whatever alpha.
TensorMap lora_runtime_weights(const LoraAdapter& adapter);

// The base weights with every adapted matrix merged, W + scale * B A (in W's own layout); the
// others shared with `base_weights`.
TensorMap merge_lora(const TensorMap& base_weights, const ir::Graph& base, const LoraAdapter& adapter);

}  // namespace orion::model
