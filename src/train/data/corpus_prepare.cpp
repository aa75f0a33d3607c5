#include "train/data/corpus_prepare.h"

#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "train/data/corpus_split.h"
#include "train/data/corpus_tokenizer.h"
#include "train/data/token_file.h"

namespace orion::train {

PreparedCorpus prepare_corpus(const std::string& model_dir, std::span<const std::string> inputs, double val_fraction,
                              const std::string& out, const CorpusProgress& progress) {
  if (inputs.empty()) throw Error("the corpus has no input file");
  const CorpusTokenizer tok = load_corpus_tokenizer(model_dir);
  std::vector<std::shared_ptr<const MappedFile>> files;
  std::size_t total = 0;
  for (const std::string& in : inputs) {
    files.push_back(MappedFile::open(in));
    total += files.back()->size();
  }

  Stopwatch sw;
  if (progress) progress(0, total);
  SplitCorpus corpus;
  std::size_t before = 0;
  for (const auto& f : files) {
    const std::string_view text(reinterpret_cast<const char*>(f->bytes().data()), f->size());
    const std::vector<std::int32_t> tokens = tok.encode(text, [&](std::size_t done) {
      if (progress) progress(before + done, total);
    });
    add_document(corpus, tokens, tok.eot_id, val_fraction, tok.bos_id);
    before += f->size();
  }
  PreparedCorpus p;
  p.tokenize_seconds = sw.seconds();
  if (corpus.train.empty() && corpus.val.empty())
    throw Error("the corpus is empty: " + std::to_string(inputs.size()) + " input file" +
                (inputs.size() == 1 ? " holds" : "s hold") + " no text (first: " + inputs.front() + ")");
  write_token_file(out, tok.vocab_size, static_cast<std::uint64_t>(tok.eot_id), corpus.train, corpus.val);
  p.files = files.size();
  p.bytes = total;
  p.train_tokens = corpus.train.size();
  p.val_tokens = corpus.val.size();
  p.vocab_size = tok.vocab_size;
  p.seconds = sw.seconds();
  return p;
}

}  // namespace orion::train
