#include "numerics_option.h"

namespace orion::cli {

void add_numerics_option(CLI::App* cmd, std::string& numerics) {
  cmd->add_option("--numerics", numerics, "f32, or f16 to round every stored value as the ANE does")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
}

exec::Numerics parse_numerics(const std::string& numerics) {
  return numerics == "f16" ? exec::Numerics::f16 : exec::Numerics::f32;
}

}  // namespace orion::cli
