// Fuzz target: the safetensors reader (model/formats/safetensors.h), header and every tensor's data.
#include "fuzz_input.h"
#include "model/formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const orion::fuzz::MemFile file(data, size);
  orion::fuzz::expect_ok_or_error([&] {
    const auto st = orion::model::SafetensorsFile::open(file.path());
    for (const auto& e : st.entries()) {
      // Both the zero-copy view and the converting copy read every byte of the tensor.
      const orion::Tensor t = st.tensor_as(e.name, orion::DType::f32);
      if (t.numel() > 0 && st.tensor(e.name).numel() != t.numel()) std::abort();
    }
  });
  return 0;
}
