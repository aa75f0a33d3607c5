// Fuzz target: GGUF files (model/formats/gguf.h): the header, every tensor dequantised (the
// types Orion reads), and the tokenizer made from the tokenizer.* keys (model/formats/
// gguf_tokenizer.h), which encodes and decodes a fixed text; the ids generation stops at.
#include "fuzz_input.h"
#include "model/formats/gguf.h"
#include "model/formats/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const orion::fuzz::MemFile file(data, size);
  orion::fuzz::expect_ok_or_error([&] {
    const auto g = orion::model::GgufFile::open(file.path());
    for (const auto& t : g.tensors())
      if (t.type_info().dequantised && g.dequantized(t).numel() != t.numel()) std::abort();
    (void)orion::model::gguf_header_json(g).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)orion::model::gguf_stop_ids(g);
    (void)orion::model::gguf_adds_bos(g);
    const auto tok = orion::model::read_gguf_tokenizer(g);
    const auto ids = tok.tokenizer->encode("In the beginning God created the heaven and the earth. naïve 東京 🙂 <|im_end|>");
    for (const std::int32_t id : ids)
      if (id < 0 || id >= tok.tokenizer->vocab_size()) std::abort();
    (void)tok.tokenizer->decode(ids);
  });
  return 0;
}
