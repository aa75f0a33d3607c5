#include "model_dir.h"

#include <filesystem>

#include "core/error.h"

namespace orion::cli {

text::BpeTokenizer load_tokenizer(const std::string& dir) {
  const std::filesystem::path d(dir);
  // OpenAI's release names the same two files encoder.json and vocab.bpe.
  if (!std::filesystem::exists(d / "vocab.json") && std::filesystem::exists(d / "encoder.json"))
    return text::BpeTokenizer::load((d / "encoder.json").string(), (d / "vocab.bpe").string());
  return text::BpeTokenizer::load((d / "vocab.json").string(), (d / "merges.txt").string());
}

ModelDir load_model_dir(const std::string& dir) {
  model::Gpt2Model m = model::Gpt2Model::load(dir);
  text::BpeTokenizer tok = load_tokenizer(dir);
  if (tok.vocab_size() > m.config().vocab_size)
    throw Error::in_file((std::filesystem::path(dir) / "vocab.json").string(),
                         "the tokenizer has " + std::to_string(tok.vocab_size()) +
                             " tokens, more than the model's vocab_size " +
                             std::to_string(m.config().vocab_size));
  return {std::move(m), std::move(tok)};
}

}  // namespace orion::cli
