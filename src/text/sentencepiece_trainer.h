#pragma once
// Training a SentencePiece vocabulary on a corpus with the library's own trainer
// (SentencePieceTrainer), with Llama's normalisation choices: no Unicode normalisation
// ("identity"), whitespace kept as written, a word-boundary mark before the first word, digits
// split, ids 0 <unk>, 1 <s> (BOS), 2 </s> (EOS). The trainer reads its inputs a line at a time
// (lines up to `max_line_bytes`; longer ones it skips, and says so).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "text/sentencepiece_tokenizer.h"

namespace orion::text {

struct SentencePieceTrainOptions {
  std::vector<std::string> inputs;  // text files
  int vocab_size = 8000;
  std::string model_type = "bpe";  // "bpe" or "unigram"
  bool byte_fallback = false;      // unknown characters as <0xNN> byte tokens (256 of the pieces)
  int threads = 0;                 // 0: one per hardware thread
  std::int64_t max_line_bytes = 1 << 16;
  bool verbose = false;            // the library's own progress log on stderr
};

// The trained tokenizer (its serialized model in memory: save() writes tokenizer.model).
// Throws orion::Error naming a missing or unreadable input, or with the trainer's message
// (e.g. a vocabulary larger than the corpus allows).
SentencePieceTokenizer train_sentencepiece(const SentencePieceTrainOptions& options);

}  // namespace orion::text
