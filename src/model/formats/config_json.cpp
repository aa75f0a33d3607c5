#include "model/formats/config_json.h"

#include "core/json_parse.h"


#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"

namespace orion::model {

using nlohmann::json;

json parse_config_object(std::string_view text, const std::string& source) {
  // parse_json bounds the nesting and names the file in every error, as for any outside file.
  const json j = parse_json(text, source);
  if (!j.is_object()) throw Error::in_file(source, "config must be a JSON object");
  return j;
}

std::string read_config_text(const std::string& path) { return read_whole_file(path); }

namespace {

// The field `key` of `j`: `fallback` when absent or null (an error when `required`), else its
// value when `is` takes it, else an error saying it must be `what`.
template <class T>
T config_field(const json& j, const char* key, T fallback, const std::string& source, bool required,
               bool (json::*is)() const noexcept, const char* what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw Error::in_file(source, std::string("missing key \"") + key + "\"");
    return fallback;
  }
  if (!((*it).*is)()) throw Error::in_file(source, std::string("key \"") + key + "\" must be " + what + ", not " + it->dump());
  return it->get<T>();
}

}  // namespace

std::int64_t config_int(const json& j, const char* key, std::int64_t fallback, const std::string& source,
                        bool required) {
  return config_field(j, key, fallback, source, required, &json::is_number_integer, "an integer");
}

double config_real(const json& j, const char* key, double fallback, const std::string& source) {
  return config_field(j, key, fallback, source, false, &json::is_number, "a number");
}

bool config_bool(const json& j, const char* key, bool fallback, const std::string& source) {
  return config_field(j, key, fallback, source, false, &json::is_boolean, "true or false");
}

std::string config_model_type(const json& j, const std::string& source) {
  auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw Error::in_file(source, "key \"model_type\" must be a string, not " + it->dump());
  return it->get<std::string>();
}

void config_check_range(std::int64_t value, const char* key, std::int64_t limit, const std::string& source) {
  if (value <= 0 || value > limit)
    throw Error::in_file(source, std::string("\"") + key + "\" is " + std::to_string(value) + ", expected 1 to " +
                                     std::to_string(limit));
}

void config_check_multiple(std::int64_t value, const char* key, std::int64_t of, const char* of_key,
                           const std::string& source) {
  if (value % of != 0)
    throw Error::in_file(source, std::string("\"") + key + "\" (" + std::to_string(value) + ") is not a multiple of \"" +
                                     of_key + "\" (" + std::to_string(of) + ")");
}

}  // namespace orion::model
