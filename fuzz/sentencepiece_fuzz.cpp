// Fuzz target: tokenizer.model files (text/sentencepiece_tokenizer.h), parsed by the SentencePiece
// library (not instrumented here: its crashes still stop the run, its memory errors may not).
// An accepted model encodes and decodes a fixed text, and names its special tokens.
#include "fuzz_input.h"
#include "text/sentencepiece_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orion::fuzz::expect_ok_or_error([&] {
    const auto tok = orion::text::SentencePieceTokenizer::from_serialized(orion::fuzz::as_text(data, size), "tokenizer.model");
    const auto ids = tok.encode("In the beginning God created the heaven and the earth. naïve 東京 🙂");
    for (const std::int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) std::abort();
    (void)tok.decode(ids);
    for (const auto special : {tok.bos_id(), tok.eos_id()})
      if (special) (void)tok.piece(*special);
  });
  return 0;
}
