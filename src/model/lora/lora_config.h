#pragma once
// A LoRA adapter's shape (Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models"): a
// targeted linear layer y = x W^T keeps W frozen and gains y += scale * (x A^T) B^T, A [rank,
// in] and B [out, rank] trained, scale = alpha / rank (alpha / sqrt(rank) with rsLoRA). The
// modules are named as the graphs name them ("h.3.attn.c_attn", "model.layers.0.self_attn.
// q_proj"); the targets are suffixes of those names, which is how PEFT's `target_modules`
// match too, so adapter_config.json can carry them as they are.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace orion::model {

struct LoraConfig {
  int rank = 8;
  double alpha = 8;  // PEFT's default lora_alpha with its default r: scale 1
  bool rslora = false;
  std::vector<std::string> targets;  // module-name suffixes, sorted, e.g. "self_attn.q_proj"

  double scale() const;
  // What fixes a LoRA run's trajectory, for checkpoints: a resumed run must match it.
  nlohmann::json identity() const;
  bool operator==(const LoraConfig&) const = default;
};

// Every linear layer of `arch`'s blocks as a target suffix, in the model's order:
// gpt2: attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj;
// llama: self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj.
std::vector<std::string> lora_all_targets(std::string_view arch);

// `--lora-targets` as suffixes: a comma-separated list of the short names q, k, v, o, gate, up,
// down, or of Hugging Face's module names (q_proj, c_attn, ...); empty or "all": every linear
// layer of the blocks. GPT-2 computes q, k and v in one layer (c_attn): there they must be
// named together. Throws orion::Error naming the entry that does not fit the architecture.
std::vector<std::string> lora_targets(std::string_view arch, std::string_view list);

// Whether module `module` ("h.3.mlp.c_proj") is targeted: it ends with a target after a dot.
bool lora_targets_module(const LoraConfig& config, std::string_view module);

}  // namespace orion::model
