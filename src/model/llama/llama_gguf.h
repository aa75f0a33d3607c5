#pragma once
// A Llama-family model from a GGUF file (model/formats/gguf.h) of the architectures llama,
// qwen2 and qwen3: the {arch}.* keys as a LlamaConfig, the tensors under Hugging Face's names
// (blk.N.attn_q.weight -> model.layers.N.self_attn.q_proj.weight, ...), dequantised to f32 at
// load (the engines run f32 weights; a quantised kernel would read the blocks in place), and
// llama.cpp's reordering of the query and key rows undone for `llama` (docs/MODELS.md, "GGUF").
#include <cstdint>
#include <string>

#include "model/formats/gguf.h"
#include "model/llama/llama_config.h"
#include "model/llama/llama_model.h"

namespace orion::model {

// The GGUF architecture names Orion reads, each the model_type of the same name.
inline constexpr std::string_view kGgufArchitectures[] = {"llama", "qwen2", "qwen3"};

// Throws orion::Error naming the file and the key: another architecture, a required key
// missing or of another type, what Orion does not implement (rope scaling other than linear or
// Llama 3's, a rotary dimension count other than the head size, value heads of another size
// than key heads), a config LlamaConfig::validate refuses.
LlamaConfig llama_config_from_gguf(const GgufFile& g);

// The model of `g`: its config (context > 0: as load_any_model's) and every tensor the config
// needs. Throws orion::Error naming the file and the GGUF tensor (and the Hugging Face name it
// stands for) for one missing, of another shape than the config needs, of a type Orion does not
// dequantise, or one the model has no place for; checks the memory the f32 weights need first.
// With `keep`, only the tensors it selects are dequantised (LlamaModel::load's part).
LlamaModel llama_model_from_gguf(const GgufFile& g, std::int64_t context = 0, const ParamFilter& keep = {});

// The GGUF name of a Hugging Face tensor name of the Llama family, "" for none
// ("model.layers.3.mlp.up_proj.weight" -> "blk.3.ffn_up.weight").
std::string gguf_tensor_name(std::string_view hf_name);

}  // namespace orion::model
