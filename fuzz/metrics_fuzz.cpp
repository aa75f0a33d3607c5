// Fuzz target: training metrics files (train/metrics_log.h), which `orion plot` reads.
#include "fuzz_input.h"
#include "train/metrics_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error(
      [&] { (void)orion::train::parse_metrics(orion::fuzz::as_text(data, size), "fuzz.jsonl"); });
  return 0;
}
