#pragma once
// The file names of a model folder's config and weights, in one place: the formats read and
// write them (checkpoint.h, convert), the families load by them, and model/model_folder.h
// finds a model by them. The tokenizer's names are text/tokenizer_files.h's.
#include <string>

namespace orion::model {

// The model's files: the Hugging Face config and the weights.
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";
// A sharded checkpoint's index (checkpoint.h reads and writes it).
inline constexpr const char* kShardIndexFile = "model.safetensors.index.json";

// DIR/config.json and DIR/model.safetensors.
std::string model_config_path(const std::string& dir);
std::string model_weights_path(const std::string& dir);

}  // namespace orion::model
