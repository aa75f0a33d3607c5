#pragma once
// The one place where `orion data prepare` meets a tokenizer: text in, token ids out, with the
// end-of-text id that separates documents and the vocabulary size the token file records.
// GPT-2's BPE encodes in parts (with progress), SentencePiece a document at a time.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orion::train {

struct CorpusTokenizer {
  // Called now and then with the bytes of the document encoded so far.
  using Progress = std::function<void(std::size_t bytes_done)>;
  // The tokens of one whole document, exactly as encoding it in one call would give them.
  std::function<std::vector<std::int32_t>(std::string_view document, const Progress& progress)> encode;
  std::int32_t eot_id = 0;
  std::optional<std::int32_t> bos_id;  // the model's: what its texts start with (Llama), or none (GPT-2)
  std::uint64_t vocab_size = 0;  // every id is below it
};

// The tokenizer of model folder DIR, and the BOS convention of its config.json. Throws orion::Error naming the folder's files when they are
// missing or malformed, or when the vocabulary has no end-of-text token.
CorpusTokenizer load_corpus_tokenizer(const std::string& dir);

}  // namespace orion::train
