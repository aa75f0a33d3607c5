#include "model/formats/config_json.h"

#include "core/json_parse.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace orion::model {

using nlohmann::json;

json parse_config_object(std::string_view text, const std::string& source) {
  // parse_json bounds the nesting and names the file in every error, as for any outside file.
  const json j = parse_json(text, source);
  if (!j.is_object()) throw Error::in_file(source, "config must be a JSON object");
  return j;
}

std::string read_config_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error::from_errno(path, "cannot open", errno);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::int64_t config_int(const json& j, const char* key, std::int64_t fallback, const std::string& source,
                        bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw Error::in_file(source, std::string("missing key \"") + key + "\"");
    return fallback;
  }
  if (!it->is_number_integer())
    throw Error::in_file(source, std::string("key \"") + key + "\" must be an integer, not " + it->dump());
  return it->get<std::int64_t>();
}

double config_real(const json& j, const char* key, double fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number())
    throw Error::in_file(source, std::string("key \"") + key + "\" must be a number, not " + it->dump());
  return it->get<double>();
}

bool config_bool(const json& j, const char* key, bool fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw Error::in_file(source, std::string("key \"") + key + "\" must be true or false, not " + it->dump());
  return it->get<bool>();
}

std::string config_model_type(const json& j, const std::string& source) {
  auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw Error::in_file(source, "key \"model_type\" must be a string, not " + it->dump());
  return it->get<std::string>();
}

}  // namespace orion::model
