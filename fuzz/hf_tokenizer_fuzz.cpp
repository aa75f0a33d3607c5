// Fuzz target: tokenizer.json (text/hf/hf_tokenizer.h). The input is the file, a NUL byte, then
// a text (JSON cannot hold a raw NUL, so the split is unambiguous); an accepted tokenizer
// encodes the text and the file itself, decodes what it encoded, and gives every id's piece.
#include "fuzz_input.h"
#include "text/hf/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = orion::fuzz::as_text(data, size);
  const std::size_t nul = in.find('\0');
  const std::string_view file = in.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view("Hello world, 123!") : in.substr(nul + 1);
  orion::fuzz::expect_ok_or_error([&] {
    const auto tok = orion::text::HfTokenizer::from_json(file, "", "fuzz");
    for (const std::string_view t : {text, file}) {
      const auto ids = tok.encode(t);
      (void)tok.decode(ids);
      for (const std::int32_t id : ids) (void)tok.piece(id);
    }
  });
  return 0;
}
