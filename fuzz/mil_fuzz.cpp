// Fuzz target: MIL text (compile/mil/mil_parser.h) and its meaning as IR (compile/mil/mil_to_ir.h).
// BLOBFILE paths resolve under $ORION_FUZZ_MIL_FOLDER (scripts/fuzz.sh points it at a kernel
// folder of a compiled package, so the seeds' weights are found); unset, they are errors.
#include <cstdlib>

#include "compile/mil/mil_to_ir.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string folder = [] {
    const char* f = std::getenv("ORION_FUZZ_MIL_FOLDER");
    return std::string(f ? f : "");
  }();
  orion::fuzz::expect_ok_or_error(
      [&] { (void)orion::compile::parse_mil(orion::fuzz::as_text(data, size), "fuzz.mil", folder); });
  return 0;
}
