#include "model_dir.h"

#include <filesystem>

#include "core/error.h"
#include "text/sentencepiece_tokenizer.h"

namespace orion::cli {

text::BpeTokenizer load_bpe_tokenizer(const std::string& dir) {
  const std::filesystem::path d(dir);
  // OpenAI's release names the same two files encoder.json and vocab.bpe.
  if (!std::filesystem::exists(d / "vocab.json") && std::filesystem::exists(d / "encoder.json"))
    return text::BpeTokenizer::load((d / "encoder.json").string(), (d / "vocab.bpe").string());
  return text::BpeTokenizer::load((d / "vocab.json").string(), (d / "merges.txt").string());
}

std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& dir) {
  const std::filesystem::path sp = std::filesystem::path(dir) / "tokenizer.model";
  if (std::filesystem::exists(sp))
    return std::make_shared<const text::SentencePieceTokenizer>(text::SentencePieceTokenizer::load(sp.string()));
  return std::make_shared<const text::BpeTokenizer>(load_bpe_tokenizer(dir));
}

const model::Gpt2Model& ModelDir::gpt2(std::string_view what) const {
  if (const auto* m = std::get_if<model::Gpt2Model>(&model)) return *m;
  throw Error(std::string(what) + " runs GPT-2 models only so far; this is a " + std::string(lm().arch()) +
              " model");
}

std::vector<std::int32_t> ModelDir::text_ids(std::string_view text) const {
  std::vector<std::int32_t> ids;
  if (const auto bos = lm().bos_token_id()) ids.push_back(*bos);
  const std::vector<std::int32_t> body = tokenizer->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) ids.push_back(static_cast<std::int32_t>(lm().eos_token_id()));
  return ids;
}

ModelDir load_model_dir(const std::string& dir) {
  model::AnyModel m = model::load_any_model(dir);
  std::shared_ptr<const text::Tokenizer> tok = load_tokenizer(dir);
  const model::CausalLm& lm = model::causal_lm(m);
  const std::string tok_file =
      (std::filesystem::path(dir) / (tok->kind() == "sentencepiece" ? "tokenizer.model" : "vocab.json")).string();
  if (const auto bos = lm.bos_token_id(); bos && tok->bos_id() && *tok->bos_id() != *bos)
    throw Error::in_file((std::filesystem::path(dir) / "config.json").string(),
                         "bos_token_id is " + std::to_string(*bos) + " but the tokenizer's is " + std::to_string(*tok->bos_id()));
  if (tok->vocab_size() > lm.vocab_size())
    throw Error::in_file(tok_file, "the tokenizer has " + std::to_string(tok->vocab_size()) +
                                       " tokens, more than the model's vocab_size " + std::to_string(lm.vocab_size()));
  return {std::move(m), std::move(tok), dir};
}

}  // namespace orion::cli
