#include "model/formats/folder_files.h"

#include <filesystem>

namespace orion::model {

namespace fs = std::filesystem;

std::string model_config_path(const std::string& dir) { return (fs::path(dir) / kConfigFile).string(); }
std::string model_weights_path(const std::string& dir) { return (fs::path(dir) / kWeightsFile).string(); }

}  // namespace orion::model
