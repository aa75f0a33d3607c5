#pragma once
// Reading a Hugging Face config.json: the file parsed as one JSON object, and typed fields
// with defaults. Every error names the file and the key, so each architecture's config reader
// (gpt2_config, llama_config) says the same things the same way.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace orion::model {

// The text parsed as a JSON object; errors name `source` and the byte offset.
nlohmann::json parse_config_object(std::string_view text, const std::string& source);
// The whole file's text; errors name the path.
std::string read_config_text(const std::string& path);

// An integer field: `fallback` when absent or null, an error naming the key when `required`.
std::int64_t config_int(const nlohmann::json& j, const char* key, std::int64_t fallback, const std::string& source,
                        bool required = false);
double config_real(const nlohmann::json& j, const char* key, double fallback, const std::string& source);
bool config_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& source);
// "model_type", or "" when the config has none.
std::string config_model_type(const nlohmann::json& j, const std::string& source);

// The checks every architecture's validate() makes, with the same messages. A size field:
// throws naming `source` unless 1 <= value <= limit.
void config_check_range(std::int64_t value, const char* key, std::int64_t limit, const std::string& source);
// Throws naming `source` unless `value` (the field `key`) is a multiple of `of` (the field `of_key`).
void config_check_multiple(std::int64_t value, const char* key, std::int64_t of, const char* of_key,
                           const std::string& source);

}  // namespace orion::model
