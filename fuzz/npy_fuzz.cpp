// Fuzz target: .npy files (core/npy_file.h), the inputs `orion mil run --inputs` reads.
#include "core/npy_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error([&] {
    const orion::Tensor t = orion::parse_npy({reinterpret_cast<const std::byte*>(data), size}, "fuzz.npy");
    // Every element the reader vouched for is there.
    if (t.nbytes() + 10 > size) std::abort();
  });
  return 0;
}
