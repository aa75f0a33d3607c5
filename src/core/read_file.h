#pragma once
// A whole file's bytes as a string: the one reader behind the readers of small text files
// (config.json, tokenizer.json, manifests).
#include <string>

namespace orion {

// Throws orion::Error naming `path` and the system's reason when it cannot be opened or read.
std::string read_whole_file(const std::string& path);

}  // namespace orion
