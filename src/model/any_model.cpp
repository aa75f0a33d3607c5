#include "model/any_model.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"

namespace orion::model {

std::string read_model_type(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error::in_file(dir, "not a model folder (no such directory)");
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  const std::string type = config_model_type(parse_config_object(read_config_text(path), path), path);
  if (type.empty() || type == "gpt2") return "gpt2";
  if (type == "llama") return "llama";
  throw Error::in_file(path, "model_type \"" + type + "\" is not supported (gpt2 or llama)");
}

AnyModel load_any_model(const std::string& dir) {
  if (read_model_type(dir) == "llama") return LlamaModel::load(dir);
  return Gpt2Model::load(dir);
}

}  // namespace orion::model
