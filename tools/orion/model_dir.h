#pragma once
// A model folder as the CLI uses it: the model (config + weights, GPT-2 or Llama by
// config.json's model_type) and its tokenizer (SentencePiece when the folder has
// tokenizer.model, else byte-level BPE from vocab.json and merges.txt).
#include <memory>
#include <string>
#include <string_view>

#include "model/any_model.h"
#include "text/bpe_tokenizer.h"
#include "text/tokenizer.h"

namespace orion::cli {

struct ModelDir {
  model::AnyModel model;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::string dir;  // where it was loaded from

  const model::CausalLm& lm() const { return model::causal_lm(model); }
  // The model as GPT-2; throws orion::Error saying that `what` runs GPT-2 models only.
  const model::Gpt2Model& gpt2(std::string_view what) const;
  // The ids a text is run as: BOS first when the model's config has one (Llama), and for a
  // model without (GPT-2) an empty text as the end-of-text token that starts a document.
  std::vector<std::int32_t> text_ids(std::string_view text) const;
};

// Loads DIR/config.json, DIR/model.safetensors and the tokenizer, and checks that the
// tokenizer's ids fit the model's vocabulary.
ModelDir load_model_dir(const std::string& dir);
// The tokenizer in DIR: tokenizer.model (SentencePiece), else vocab.json and merges.txt (or
// OpenAI's names for them, encoder.json and vocab.bpe).
std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& dir);
// DIR's byte-level BPE files (vocab.json and merges.txt, or encoder.json and vocab.bpe).
text::BpeTokenizer load_bpe_tokenizer(const std::string& dir);

}  // namespace orion::cli
