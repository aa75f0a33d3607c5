#pragma once
// A model folder: finds a model by its files' names (config.json and model.safetensors,
// model/formats/folder_files.h; the tokenizer's, text/tokenizer_files.h) and loads what every command needs from it:
// the model (by config.json's model_type) and its tokenizer (load_tokenizer below). A GGUF file
// (model/formats/gguf.h) stands for a whole folder: model, tokenizer and chat template in one
// file, taken wherever a folder is.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/any_model.h"
#include "model/formats/checkpoint.h"
#include "model/formats/folder_files.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace orion::model {

struct ModelFolder {
  AnyModel model;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::string dir;  // where it was loaded from
  // The ids generation stops at: config.json's eos_token_id (one or a list) and
  // generation_config.json's, when the folder has one (Qwen's instruct models list two).
  std::vector<std::int32_t> stop_ids;
  // A GGUF file's tokenizer.chat_template ("" when it has none) and the special tokens the
  // template sees by name; unused for a folder, whose template is in tokenizer_config.json.
  bool gguf = false;
  std::string gguf_chat_template;
  nlohmann::json gguf_special_tokens = nlohmann::json::object();

  // Loads DIR/config.json, DIR/model.safetensors and the tokenizer (or all three from DIR,
  // a GGUF file), and checks that the tokenizer's ids fit the model's vocabulary. Errors name
  // the file.
  // `context` > 0: as load_any_model's; `keep`: a part of the model's params (load_any_model's).
  static ModelFolder load(const std::string& dir, std::int64_t context = 0, const ParamFilter& keep = {});

  const CausalLm& lm() const { return causal_lm(model); }
  // The model as GPT-2; throws orion::Error saying that `what` runs GPT-2 models only.
  const Gpt2Model& gpt2(std::string_view what) const;
  // tokenizer_config.json's chat template (a GGUF file's tokenizer.chat_template); throws
  // orion::Error naming the file when the folder has none.
  text::ChatTemplate chat_template() const;
  // The ids a rendered chat prompt runs as: the template writes the special tokens itself, as
  // transformers' apply_chat_template (which tokenizes without adding any).
  std::vector<std::int32_t> chat_ids(std::string_view rendered) const;
  // The ids a text is run as: BOS first when the model's config has one (Llama), and for a
  // model without (GPT-2) an empty text as the end-of-text token that starts a document.
  std::vector<std::int32_t> text_ids(std::string_view text) const;
};

// Writes the model folder `dir` as a whole (core/atomic_folder.h): a crash or kill leaves the
// old folder or the complete new one, never new weights beside an old config.json. An existing
// folder is replaced with everything in it: the caller checks that it holds nothing else.
void write_model_folder(const std::string& dir, const TensorMap& weights, const std::string& config_json,
                        const text::Tokenizer& tokenizer, const CheckpointLayout& layout = {});

// The tokenizer in DIR: tokenizer.json (Hugging Face's format), else tokenizer.model
// (SentencePiece), else vocab.json and merges.txt (or OpenAI's names for them, encoder.json and
// vocab.bpe); or DIR's tokenizer.* keys when DIR is a GGUF file.
std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& dir);
// DIR's chat template: tokenizer_config.json's "chat_template", or a GGUF file's
// tokenizer.chat_template; nullopt when it has none.
std::optional<text::ChatTemplate> find_chat_template(const std::string& dir);
// DIR's byte-level BPE files (vocab.json and merges.txt, or encoder.json and vocab.bpe).
text::BpeTokenizer load_bpe_tokenizer(const std::string& dir);

}  // namespace orion::model
