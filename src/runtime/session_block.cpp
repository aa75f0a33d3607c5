#include "runtime/session_block.h"

#include "core/error.h"

namespace orion::runtime {

std::string session_name(const compile::PackageProgram& p, const char* key) {
  const nlohmann::json& s = p.session;
  if (!s.is_object() || !s.contains(key) || !s[key].is_string())
    throw Error("package program " + p.name + ": its session block has no \"" + key + "\" name");
  return s[key].get<std::string>();
}

std::int64_t session_int(const compile::PackageProgram& p, const char* key) {
  const nlohmann::json& s = p.session;
  if (!s.is_object() || !s.contains(key) || !s[key].is_number_integer())
    throw Error("package program " + p.name + ": its session block has no integer \"" + key + "\"");
  return s[key].get<std::int64_t>();
}

Tensor positions_from(std::int64_t first, std::int64_t n) {
  Tensor t(DType::i32, {n});
  for (std::int64_t i = 0; i < n; ++i) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(first + i);
  return t;
}

}  // namespace orion::runtime
