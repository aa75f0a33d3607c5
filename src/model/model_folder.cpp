#include "model/model_folder.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "model/formats/safetensors.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/tokenizer_files.h"

namespace orion::model {

namespace fs = std::filesystem;

std::string model_config_path(const std::string& dir) { return (fs::path(dir) / kConfigFile).string(); }
std::string model_weights_path(const std::string& dir) { return (fs::path(dir) / kWeightsFile).string(); }

void write_model_folder(const std::string& dir, const TensorMap& weights, const std::string& config_json,
                        const text::Tokenizer& tokenizer, const CheckpointLayout& layout) {
  const fs::path target = fs::absolute(dir).lexically_normal();
  const fs::path folder = target.has_filename() ? target : target.parent_path();
  if (!folder.has_parent_path() || folder == folder.root_path())
    throw Error::in_file(dir, "cannot be replaced as a whole (it has no parent folder)");
  fs::create_directories(folder.parent_path());
  AtomicFolderWriter out(folder.string());
  write_checkpoint(out.temp_path(), {weights.begin(), weights.end()}, layout);
  write_file_atomic(out.file(kConfigFile), config_json);
  tokenizer.save(out.temp_path());
  out.commit(/*replace=*/true);
}

text::BpeTokenizer load_bpe_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  // OpenAI's release names the same two files encoder.json and vocab.bpe.
  if (!fs::exists(d / text::kBpeVocabFile) && fs::exists(d / text::kOpenAiVocabFile))
    return text::BpeTokenizer::load((d / text::kOpenAiVocabFile).string(), (d / text::kOpenAiMergesFile).string());
  return text::BpeTokenizer::load((d / text::kBpeVocabFile).string(), (d / text::kBpeMergesFile).string());
}

std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& dir) {
  const fs::path sp = fs::path(dir) / text::kSentencePieceFile;
  if (fs::exists(sp))
    return std::make_shared<const text::SentencePieceTokenizer>(text::SentencePieceTokenizer::load(sp.string()));
  return std::make_shared<const text::BpeTokenizer>(load_bpe_tokenizer(dir));
}

const Gpt2Model& ModelFolder::gpt2(std::string_view what) const {
  if (const auto* m = std::get_if<Gpt2Model>(&model)) return *m;
  throw Error(std::string(what) + " runs GPT-2 models only so far; this is a " + std::string(lm().arch()) +
              " model");
}

std::vector<std::int32_t> ModelFolder::text_ids(std::string_view text) const {
  std::vector<std::int32_t> ids;
  if (const auto bos = lm().bos_token_id()) ids.push_back(*bos);
  const std::vector<std::int32_t> body = tokenizer->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) ids.push_back(static_cast<std::int32_t>(lm().eos_token_id()));
  return ids;
}

ModelFolder ModelFolder::load(const std::string& dir) {
  AnyModel m = load_any_model(dir);
  std::shared_ptr<const text::Tokenizer> tok = load_tokenizer(dir);
  const CausalLm& lm = causal_lm(m);
  const std::string tok_file =
      (fs::path(dir) / (tok->kind() == "sentencepiece" ? text::kSentencePieceFile : text::kBpeVocabFile)).string();
  if (const auto bos = lm.bos_token_id(); bos && tok->bos_id() && *tok->bos_id() != *bos)
    throw Error::in_file(model_config_path(dir),
                         "bos_token_id is " + std::to_string(*bos) + " but the tokenizer's is " + std::to_string(*tok->bos_id()));
  if (tok->vocab_size() > lm.vocab_size())
    throw Error::in_file(tok_file, "the tokenizer has " + std::to_string(tok->vocab_size()) +
                                       " tokens, more than the model's vocab_size " + std::to_string(lm.vocab_size()));
  return {std::move(m), std::move(tok), dir};
}

}  // namespace orion::model
