#include "runtime/session_block.h"

#include <algorithm>
#include <cstring>
#include <limits>

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

std::int64_t session_window(const compile::PackageProgram& p) {
  const nlohmann::json& s = p.session;
  return s.is_object() && s.contains("window") ? session_int(p, "window") : 0;
}

void hide_before_window(float* row, std::int64_t count, std::int64_t query, std::int64_t window) {
  const std::int64_t end = std::min(count, query - window + 1);
  for (std::int64_t j = 0; j < end; ++j) row[j] = -std::numeric_limits<float>::infinity();
}

Tensor positions_from(std::int64_t first, std::int64_t n) {
  Tensor t(DType::i32, {n});
  for (std::int64_t i = 0; i < n; ++i) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(first + i);
  return t;
}

TensorMap run_prefill(PackageRunner& runner, std::span<const std::int32_t> tokens, std::string_view then) {
  const compile::PackageProgram& p = runner.manifest().program("prefill");
  const auto n = static_cast<std::int64_t>(tokens.size());
  if (n < 1 || n > p.seq)
    throw Error("prefill: a prompt of " + std::to_string(n) + " tokens does not fit the package's window of " +
                std::to_string(p.seq) + " (recompile with a larger --seq)");
  runner.prepare("prefill");
  if (!then.empty()) runner.prepare(then);
  Tensor tok(DType::i32, {p.seq});
  std::memset(tok.raw(), 0, tok.nbytes());
  std::memcpy(tok.raw(), tokens.data(), tokens.size_bytes());
  return runner.run("prefill", {{session_name(p, "tokens"), tok}, {session_name(p, "positions"), positions_from(0, p.seq)}});
}

}  // namespace orion::runtime
