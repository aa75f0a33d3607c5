// Fuzz target: the BPE tokenizer's files (text/bpe_tokenizer.h). The input is vocab.json, a
// NUL byte, then merges.txt (JSON text cannot hold a raw NUL, so the split is unambiguous);
// an accepted tokenizer then encodes and decodes a fixed text and the input itself.
#include "fuzz_input.h"
#include "text/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = orion::fuzz::as_text(data, size);
  const std::size_t nul = in.find('\0');
  const std::string_view vocab = in.substr(0, nul);
  const std::string_view merges = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  orion::fuzz::expect_ok_or_error([&] {
    const auto tok = orion::text::BpeTokenizer::from_data(vocab, merges, "fuzz");
    for (const std::string_view text : {std::string_view("Hello world, <|endoftext|> and more."), merges}) {
      const auto ids = tok.encode(text);
      if (tok.decode(ids) != text) std::abort();  // the documented round trip
    }
  });
  return 0;
}
