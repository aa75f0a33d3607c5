// Fuzz target: GPT-2's config.json reader (model/gpt2/gpt2_config.h) and the derived sizes.
#include "fuzz_input.h"
#include "model/gpt2/gpt2_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error([&] {
    const auto c = orion::model::parse_gpt2_config(orion::fuzz::as_text(data, size), "config.json");
    // An accepted config's sizes must be computable without overflow (UBSan checks).
    (void)c.parameter_count();
    (void)c.hidden();
    (void)orion::model::parse_gpt2_config(orion::model::gpt2_config_json(c), "round trip");
  });
  return 0;
}
