// Fuzz target: the IR text parser and verifier (ir/parser.h), and the printer's round trip.
#include "fuzz_input.h"
#include "ir/parser.h"
#include "ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error([&] {
    const auto g = orion::ir::parse_graph(orion::fuzz::as_text(data, size), "fuzz.ir");
    (void)orion::ir::parse_graph(orion::ir::print_graph(g), "printed.ir");
  });
  return 0;
}
