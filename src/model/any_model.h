#pragma once
// A model folder of any supported architecture, chosen by config.json's model_type ("gpt2",
// or absent: GPT-2, as older GPT-2 configs have none; the Llama family: "llama", "mistral",
// "qwen2", "qwen3", "gemma3_text", "qwen3_5_text", model/llama/llama_config.h; Qwen3.5's
// multimodal "qwen3_5", whose text model loads from its text_config and
// model.language_model.* tensors); or a GGUF file of the architectures llama,
// qwen2 and qwen3 (model/llama/llama_gguf.h), which every function here takes where it takes a
// folder.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "model/causal_lm.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"
#include "text/tokenizer.h"

namespace orion::model {

using AnyModel = std::variant<Gpt2Model, LlamaModel>;

// The architecture DIR/config.json names. Throws orion::Error naming the file for a missing or
// unreadable config or an architecture Orion does not implement.
std::string read_model_type(const std::string& dir);
// The bos_token_id texts of DIR's model start with when its tokenizer does not say: a Llama
// family config's (a GGUF file's BOS when it adds one); nullopt for GPT-2. Errors as
// read_model_type's.
std::optional<std::int64_t> read_bos_token_id(const std::string& dir);
// The ids a data file made for DIR's model with `tok` (its tokenizer) may hold: the tokenizer's
// vocab_size(), or the Llama-family config's vocab_size where that is smaller and the
// tokenizer's ids past it are special tokens only (text::text_vocab_size: Gemma 3's
// <image_soft_token> one past the text model's rows). Errors as read_model_type's.
std::int64_t read_data_vocab_size(const std::string& dir, const text::Tokenizer& tok);
// `context` > 0: run that many positions where the config allows them, beyond the default cap
// (LlamaConfig::context_cap; GPT-2's learned positions allow no more than n_positions).
// `keep`: a part of a Llama-family model (LlamaModel::load); GPT-2 is refused.
AnyModel load_any_model(const std::string& dir, std::int64_t context = 0, const ParamFilter& keep = {});
// DIR's Llama-family config (a folder's config.json or a GGUF file's); throws orion::Error
// naming the file for GPT-2 or an unreadable config.
LlamaConfig read_any_llama_config(const std::string& dir);

inline const CausalLm& causal_lm(const AnyModel& m) {
  return std::visit([](const auto& x) -> const CausalLm& { return x; }, m);
}

}  // namespace orion::model
