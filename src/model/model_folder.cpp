#include "model/model_folder.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "model/formats/config_json.h"
#include "model/formats/gguf.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/llama/llama_gguf.h"
#include "model/formats/safetensors.h"
#include "text/hf/hf_tokenizer.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/tokenizer_files.h"

namespace orion::model {

namespace fs = std::filesystem;

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
  if (is_gguf_file(dir)) return read_gguf_tokenizer(GgufFile::open(dir)).tokenizer;
  // tokenizer.json first: Hugging Face folders that also carry tokenizer.model or vocab.json run
  // with it in transformers (the "fast" tokenizer).
  if (fs::exists(fs::path(dir) / text::kTokenizerJsonFile))
    return std::make_shared<const text::HfTokenizer>(text::HfTokenizer::load(dir));
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
  // The tokenizer's own files decide where they say (tokenizer.json's post-processor: Qwen
  // configs name a bos_token_id that Qwen's tokenizer never adds); else the model's config.
  if (const auto prefix = tokenizer->text_prefix())
    ids = *prefix;
  else if (const auto bos = lm().bos_token_id())
    ids.push_back(*bos);
  const std::vector<std::int32_t> body = tokenizer->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) ids.push_back(static_cast<std::int32_t>(lm().eos_token_id()));
  return ids;
}

namespace {

// The tokenizer's ids against the model's: the same BOS, no id past the vocabulary.
// `config_file` and `tok_file` name where each side comes from.
void check_tokenizer_fits(const CausalLm& lm, const text::Tokenizer& tok, const std::string& config_file,
                          const std::string& tok_file) {
  if (const auto bos = lm.bos_token_id(); bos && tok.bos_id() && *tok.bos_id() != *bos)
    throw Error::in_file(config_file,
                         "bos_token_id is " + std::to_string(*bos) + " but the tokenizer's is " + std::to_string(*tok.bos_id()));
  if (text::text_vocab_size(tok) > lm.vocab_size())
    throw Error::in_file(tok_file, "the tokenizer has " + std::to_string(text::text_vocab_size(tok)) +
                                       " tokens, more than the model's vocab_size " + std::to_string(lm.vocab_size()));
}

ModelFolder load_gguf(const std::string& path, std::int64_t context, const ParamFilter& keep) {
  const GgufFile g = GgufFile::open(path);
  GgufTokenizer t = read_gguf_tokenizer(g);
  ModelFolder md{.model = llama_model_from_gguf(g, context, keep),
                 .tokenizer = std::move(t.tokenizer),
                 .dir = path,
                 .stop_ids = {},
                 .gguf = true,
                 .gguf_chat_template = std::move(t.chat_template),
                 .gguf_special_tokens = std::move(t.special_tokens)};
  check_tokenizer_fits(md.lm(), *md.tokenizer, path, path);
  md.stop_ids = md.lm().stop_ids();
  return md;
}

}  // namespace

ModelFolder ModelFolder::load(const std::string& dir, std::int64_t context, const ParamFilter& keep) {
  if (is_gguf_file(dir)) return load_gguf(dir, context, keep);
  AnyModel m = load_any_model(dir, context, keep);
  std::shared_ptr<const text::Tokenizer> tok = load_tokenizer(dir);
  const CausalLm& lm = causal_lm(m);
  const std::string tok_file =
      (fs::path(dir) / (tok->kind() == "sentencepiece"    ? text::kSentencePieceFile
                        : tok->kind() == "tokenizer.json" ? text::kTokenizerJsonFile
                                                          : text::kBpeVocabFile))
          .string();
  check_tokenizer_fits(lm, *tok, model_config_path(dir), tok_file);
  std::vector<std::int32_t> stops = lm.stop_ids();
  if (const fs::path g = fs::path(dir) / text::kGenerationConfigFile; fs::exists(g)) {
    const nlohmann::json j = parse_json(read_config_text(g.string()), g.string());
    const nlohmann::json eos = j.is_object() ? j.value("eos_token_id", nlohmann::json()) : nlohmann::json();
    for (const nlohmann::json& id : eos.is_array() ? eos : nlohmann::json::array({eos})) {
      if (id.is_null()) continue;
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= lm.vocab_size())
        throw Error::in_file(g.string(), "\"eos_token_id\" lists " + id.dump() + ", not an id of the vocabulary");
      if (std::find(stops.begin(), stops.end(), id.get<std::int32_t>()) == stops.end()) stops.push_back(id.get<std::int32_t>());
    }
  }
  return {.model = std::move(m),
          .tokenizer = std::move(tok),
          .dir = dir,
          .stop_ids = std::move(stops),
          .gguf = false,
          .gguf_chat_template = {},
          .gguf_special_tokens = {}};
}

std::optional<text::ChatTemplate> find_chat_template(const std::string& dir) {
  if (is_gguf_file(dir)) {
    const GgufTokenizer t = read_gguf_tokenizer(GgufFile::open(dir));
    if (t.chat_template.empty()) return std::nullopt;
    return text::ChatTemplate::from_text(t.chat_template, dir + ": tokenizer.chat_template", t.special_tokens);
  }
  const fs::path config = fs::path(dir) / text::kTokenizerConfigFile;
  if (!fs::exists(config)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(read_config_text(config.string()), nullptr, false);
  if (!j.is_object() || !j.contains("chat_template")) return std::nullopt;
  return text::ChatTemplate::from_tokenizer_config(config.string());
}

text::ChatTemplate ModelFolder::chat_template() const {
  if (gguf) {
    if (gguf_chat_template.empty())
      throw Error::in_file(dir, "has no tokenizer.chat_template, so no chat template: chat needs a model that ships one");
    return text::ChatTemplate::from_text(gguf_chat_template, dir + ": tokenizer.chat_template", gguf_special_tokens);
  }
  const fs::path p = fs::path(dir) / text::kTokenizerConfigFile;
  if (!fs::exists(p))
    throw Error::in_file(dir, "has no tokenizer_config.json, so no chat template: chat needs a model folder that ships one");
  return text::ChatTemplate::from_tokenizer_config(p.string());
}

std::vector<std::int32_t> ModelFolder::chat_ids(std::string_view rendered) const {
  std::vector<std::int32_t> ids = tokenizer->encode(rendered);
  if (ids.empty()) ids.push_back(static_cast<std::int32_t>(lm().eos_token_id()));
  return ids;
}

}  // namespace orion::model
