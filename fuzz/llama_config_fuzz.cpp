// Fuzz target: Llama's config.json reader (model/llama/llama_config.h) and the derived sizes.
#include "fuzz_input.h"
#include "model/llama/llama_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error([&] {
    const auto c = orion::model::parse_llama_config(orion::fuzz::as_text(data, size), "config.json");
    // An accepted config's sizes must be computable without overflow (UBSan checks).
    (void)c.parameter_count();
    (void)c.head_dim();
    (void)c.kv_width();
    (void)orion::model::parse_llama_config(orion::model::llama_config_json(c), "round trip");
  });
  return 0;
}
