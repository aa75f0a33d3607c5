#pragma once
// A model folder as the CLI uses it: the model (config + weights) and its tokenizer.
#include <string>

#include "model/gpt2_model.h"
#include "text/bpe_tokenizer.h"

namespace orion::cli {

struct ModelDir {
  model::Gpt2Model model;
  text::BpeTokenizer tokenizer;
};

// Loads DIR/config.json, DIR/model.safetensors, DIR/vocab.json and DIR/merges.txt, and checks
// that the tokenizer's ids fit the model's vocabulary.
ModelDir load_model_dir(const std::string& dir);
// DIR/vocab.json and DIR/merges.txt, or OpenAI's names for them, encoder.json and vocab.bpe.
text::BpeTokenizer load_tokenizer(const std::string& dir);

}  // namespace orion::cli
