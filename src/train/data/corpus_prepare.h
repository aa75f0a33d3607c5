#pragma once
// `orion data prepare` for text: files, one document each, tokenized with a model folder's
// tokenizer (train/data/corpus_tokenizer.h), split document by document
// (train/data/corpus_split.h) and written as a token file (train/data/token_file.h). JSONL
// data has its own path, train/data/jsonl_records.h's prepare_jsonl.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace orion::train {

struct PreparedCorpus {
  std::size_t files = 0;
  std::uint64_t bytes = 0;  // of every input
  std::uint64_t train_tokens = 0, val_tokens = 0;
  std::uint64_t vocab_size = 0;
  // From when every input is open: the tokenizing alone (its rate is the figure users watch),
  // and everything, the writing included.
  double tokenize_seconds = 0, seconds = 0;
};

// Called with 0 when tokenizing begins (the inputs are open), then now and then with the bytes of
// all inputs encoded so far; `bytes_total` is theirs together.
using CorpusProgress = std::function<void(std::size_t bytes_done, std::size_t bytes_total)>;

// Tokenizes `inputs` for model folder `model_dir`, holds out the last `val_fraction` of each
// document and writes the token file `out` atomically. Every input is opened before any work,
// so that a missing one fails at once. Throws orion::Error for a missing or unreadable input, a
// val_fraction outside [0, 1), or a corpus without a token.
PreparedCorpus prepare_corpus(const std::string& model_dir, std::span<const std::string> inputs, double val_fraction,
                              const std::string& out, const CorpusProgress& progress = {});

}  // namespace orion::train
