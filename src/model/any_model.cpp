#include "model/any_model.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"
#include "model/formats/folder_files.h"
#include "model/formats/gguf.h"
#include "model/llama/llama_gguf.h"

namespace orion::model {

namespace {

// A multimodal folder whose text model Orion runs (Qwen3.5's published qwen3_5): the text
// config, with the top-level tie_word_embeddings it ties by.
nlohmann::json text_model_config(const nlohmann::json& j, const std::string& path) {
  auto text = j.find("text_config");
  if (text == j.end() || !text->is_object())
    throw Error::in_file(path, "model_type \"qwen3_5\" has no \"text_config\" object: not a Qwen3.5 folder");
  nlohmann::json t = *text;
  t["model_type"] = "qwen3_5_text";
  if (auto tie = j.find("tie_word_embeddings"); tie != j.end()) t["tie_word_embeddings"] = *tie;
  for (const char* key : {"bos_token_id", "eos_token_id"})
    if (auto id = j.find(key); id != j.end() && !t.contains(key)) t[key] = *id;
  return t;
}

struct FolderConfig {
  nlohmann::json j;
  bool multimodal = false;  // j is a multimodal folder's text config (LlamaConfig::multimodal_checkpoint)
};

// DIR/config.json parsed, once: the architecture's config is read from the same object.
FolderConfig read_folder_config(const std::string& dir, const std::string& path) {
  if (!std::filesystem::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  nlohmann::json j = parse_config_object(read_config_text(path), path);
  if (j.contains("model_type") && j["model_type"] == "qwen3_5") return {text_model_config(j, path), true};
  return {std::move(j), false};
}

std::string supported_model_type(const nlohmann::json& j, const std::string& path) {
  const std::string type = config_model_type(j, path);
  if (type.empty() || type == "gpt2") return "gpt2";
  if (is_llama_family(type)) return type;
  if (type == "gemma3")
    throw Error::in_file(path, "model_type \"gemma3\" (Gemma 3's multimodal folder, 4B and up) is not supported yet; its "
                               "text models (gemma3_text: 270M, 1B) are");
  throw Error::in_file(path, "model_type \"" + type + "\" is not supported (gpt2, " + llama_family_list() + ")");
}

}  // namespace

std::string read_model_type(const std::string& dir) {
  if (is_gguf_file(dir)) return llama_config_from_gguf(GgufFile::open(dir)).model_type;
  const std::string path = model_config_path(dir);
  return supported_model_type(read_folder_config(dir, path).j, path);
}

std::optional<std::int64_t> read_bos_token_id(const std::string& dir) {
  if (is_gguf_file(dir)) return llama_config_from_gguf(GgufFile::open(dir)).bos_token_id;
  const std::string path = model_config_path(dir);
  const nlohmann::json j = read_folder_config(dir, path).j;
  if (!is_llama_family(supported_model_type(j, path))) return std::nullopt;
  return llama_config_from_json(j, path).bos_token_id;
}

std::int64_t read_data_vocab_size(const std::string& dir, const text::Tokenizer& tok) {
  const std::int64_t tokenizer_vocab = tok.vocab_size();
  if (is_gguf_file(dir) || !std::filesystem::exists(model_config_path(dir))) return tokenizer_vocab;
  const std::string path = model_config_path(dir);
  const nlohmann::json j = read_folder_config(dir, path).j;
  if (!is_llama_family(supported_model_type(j, path))) return tokenizer_vocab;
  const std::int64_t model_vocab = llama_config_from_json(j, path).vocab_size;
  return model_vocab < tokenizer_vocab && text::text_vocab_size(tok) <= model_vocab ? model_vocab : tokenizer_vocab;
}

AnyModel load_any_model(const std::string& dir, std::int64_t context, const ParamFilter& keep) {
  if (is_gguf_file(dir)) return llama_model_from_gguf(GgufFile::open(dir), context, keep);
  const std::string path = model_config_path(dir);
  const FolderConfig folder = read_folder_config(dir, path);
  const nlohmann::json& j = folder.j;
  if (is_llama_family(supported_model_type(j, path))) {
    LlamaConfig c = llama_config_from_json(j, path);
    c.multimodal_checkpoint = folder.multimodal;
    c.context_cap = std::max(c.context_cap, context);
    return LlamaModel::load(dir, std::move(c), keep);
  }
  if (keep) throw Error::in_file(path, "is a GPT-2 model, which loads whole (a part of a model is a Llama-family one's)");
  return Gpt2Model::load(dir, gpt2_config_from_json(j, path));
}

LlamaConfig read_any_llama_config(const std::string& dir) {
  if (is_gguf_file(dir)) return llama_config_from_gguf(GgufFile::open(dir));
  const std::string path = model_config_path(dir);
  const nlohmann::json j = read_folder_config(dir, path).j;
  const std::string type = supported_model_type(j, path);
  if (!is_llama_family(type)) throw Error::in_file(path, "is a " + type + " model, not one of the Llama family");
  return llama_config_from_json(j, path);
}

}  // namespace orion::model
