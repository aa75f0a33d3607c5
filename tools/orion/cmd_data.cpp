// orion data prepare: text files tokenized with a model folder's tokenizer into a token file
// (docs/FORMATS.md, "Token files") with a held-out validation split, the trainer's input.
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "train/data/corpus_tokenizer.h"
#include "train/data/corpus_split.h"
#include "train/data/token_file.h"

namespace orion::cli {

namespace {

struct PrepareOpts {
  std::string model_dir, out;
  std::vector<std::string> inputs;
  double val_fraction = 0.05;
};

constexpr double kMB = 1e6;

// The live line on stderr, only on a terminal and only for inputs that take a while.
class ProgressLine {
 public:
  explicit ProgressLine(std::size_t total) : total_(total), shown_(total >= 4 * 1000 * 1000 && ::isatty(2)) {}
  void update(std::size_t done) {
    if (!shown_ || (done < total_ && sw_.seconds() < last_ + 0.2)) return;
    last_ = sw_.seconds();
    std::fprintf(stderr, "\rtokenizing: %.1f / %.1f MB (%3.0f%%), %.1f MB/s ", static_cast<double>(done) / kMB,
                 static_cast<double>(total_) / kMB, 100.0 * static_cast<double>(done) / static_cast<double>(total_),
                 static_cast<double>(done) / kMB / std::max(last_, 1e-9));
  }
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  std::size_t total_;
  bool shown_;
  Stopwatch sw_;
  double last_ = -1.0;
};

void prepare(const PrepareOpts& o) {
  const train::CorpusTokenizer tok = train::load_corpus_tokenizer(o.model_dir);
  // Every input is opened before any work, so that a missing one fails at once.
  std::vector<std::shared_ptr<const MappedFile>> files;
  std::size_t total = 0;
  for (const std::string& in : o.inputs) {
    files.push_back(MappedFile::open(in));
    total += files.back()->size();
  }

  Stopwatch sw;
  train::SplitCorpus corpus;
  {
    ProgressLine progress(total);
    std::size_t before = 0;
    for (const auto& f : files) {
      const std::string_view text(reinterpret_cast<const char*>(f->bytes().data()), f->size());
      const std::vector<std::int32_t> tokens =
          tok.encode(text, [&](std::size_t done) { progress.update(before + done); });
      train::add_document(corpus, tokens, tok.eot_id, o.val_fraction, tok.bos_id);
      before += f->size();
    }
  }
  const double encode_s = sw.seconds();
  if (corpus.train.empty() && corpus.val.empty())
    throw Error("the corpus is empty: " + std::to_string(o.inputs.size()) + " input file" +
                (o.inputs.size() == 1 ? " holds" : "s hold") + " no text (first: " + o.inputs.front() + ")");
  train::write_token_file(o.out, tok.vocab_size, static_cast<std::uint64_t>(tok.eot_id), corpus.train, corpus.val);

  const std::size_t tokens = corpus.train.size() + corpus.val.size();
  std::printf("wrote %s: %zu tokens from %zu file%s (%.2f MB): %zu training, %zu validation (%.1f%%); "
              "%.2f bytes per token; vocabulary %llu (%u-byte tokens); %.2f s (%.1f MB/s tokenizing)\n",
              o.out.c_str(), tokens, files.size(), files.size() == 1 ? "" : "s", static_cast<double>(total) / kMB,
              corpus.train.size(), corpus.val.size(),
              100.0 * static_cast<double>(corpus.val.size()) / static_cast<double>(tokens),
              static_cast<double>(total) / static_cast<double>(tokens), static_cast<unsigned long long>(tok.vocab_size),
              train::token_width_for(tok.vocab_size), sw.seconds(), static_cast<double>(total) / kMB / encode_s);
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Training data: tokenize a corpus into a token file");
  data->require_subcommand(1);
  auto o = std::make_shared<PrepareOpts>();
  auto* cmd = data->add_subcommand(
      "prepare",
      "Tokenize text files (one document each, separated by end-of-text) into a token file whose validation "
      "split is the last --val-fraction of each document's tokens");
  cmd->add_option("-m,--model", o->model_dir, "Model folder whose tokenizer to use")->required();
  cmd->add_option("--in", o->inputs, "Text files, one document each")->required();
  cmd->add_option("--out", o->out, "Token file to write")->required();
  cmd->add_option("--val-fraction", o->val_fraction, "Share of each document's tokens held out for validation, in [0, 1)")
      ->check(CLI::Validator(
          [](const std::string& s) -> std::string {
            try {
              const double v = std::stod(s);
              return v >= 0.0 && v < 1.0 ? "" : "must be in [0, 1)";
            } catch (const std::exception&) {
              return "not a number";
            }
          },
          "in [0, 1)"))
      ->capture_default_str();
  cmd->callback([o] { prepare(*o); });
}

}  // namespace orion::cli
