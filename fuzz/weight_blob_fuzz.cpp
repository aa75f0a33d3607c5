// Fuzz target: weight blob files (compile/blob/weight_blob_reader.h), mapped like the real ones.
#include "compile/blob/weight_blob_reader.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const orion::fuzz::MemFile file(data, size);
  orion::fuzz::expect_ok_or_error([&] {
    const auto r = orion::compile::WeightBlobReader::open(file.path());
    for (const auto& b : r.records()) {
      // Touch every byte the reader vouched for, then ask for a tensor of a whole element count.
      unsigned sum = 0;
      for (const std::byte x : b.data) sum += static_cast<unsigned>(x);
      (void)sum;
      if (&r.at(b.record_offset) != &b) std::abort();
      orion::fuzz::expect_ok_or_error([&] {
        (void)r.tensor(b.record_offset, orion::DType::u8, orion::Shape{static_cast<std::int64_t>(b.size)});
      });
      // Sub-byte blobs (4-bit weights) as the values they hold.
      if (orion::compile::is_sub_byte(b.dtype))
        orion::fuzz::expect_ok_or_error([&] {
          (void)r.sub_byte_tensor(b.record_offset, b.dtype, orion::Shape{static_cast<std::int64_t>(b.element_count())});
        });
    }
  });
  return 0;
}
