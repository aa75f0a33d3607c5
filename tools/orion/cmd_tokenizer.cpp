// orion tokenizer train: a SentencePiece vocabulary trained on the user's text with the
// library's own trainer (text/sentencepiece_trainer.h), written as DIR/tokenizer.model for
// `orion init --tokenizer DIR`.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "text/sentencepiece_trainer.h"
#include "text/tokenizer_files.h"

namespace orion::cli {

namespace {

struct TokenizerTrainOpts {
  text::SentencePieceTrainOptions train;
  std::string out;
  bool force = false;
};

void train(const TokenizerTrainOpts& o) {
  const std::filesystem::path target = std::filesystem::path(o.out) / text::kSentencePieceFile;
  if (std::filesystem::exists(target) && !o.force)
    throw Error::in_file(target.string(), "exists already (use --force to overwrite)");
  std::uint64_t bytes = 0;
  for (const std::string& in : o.train.inputs) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(in, ec)) throw Error::in_file(in, "no such file");
    bytes += std::filesystem::file_size(in);
  }
  std::fprintf(stderr, "tokenizer: training a %s vocabulary of %d pieces on %zu file(s), %.1f MB%s...\n",
               o.train.model_type.c_str(), o.train.vocab_size, o.train.inputs.size(), static_cast<double>(bytes) / 1e6,
               o.train.byte_fallback ? ", with byte fallback" : "");
  Stopwatch sw;
  const text::SentencePieceTokenizer tok = text::train_sentencepiece(o.train);
  const double train_s = sw.seconds();
  tok.save(o.out);
  // How well the vocabulary compresses what it was trained on: the summary's one figure.
  sw.restart();
  std::uint64_t tokens = 0;
  for (const std::string& in : o.train.inputs) {
    const auto file = MappedFile::open(in);
    tokens += tok.encode(std::string_view(reinterpret_cast<const char*>(file->bytes().data()), file->size())).size();
  }
  std::fprintf(stderr, "tokenizer: wrote %s: %d pieces, trained in %.1f s; the input is %llu tokens, %.2f bytes per token "
                       "(encoded in %.1f s)\n",
               target.string().c_str(), tok.vocab_size(), train_s, static_cast<unsigned long long>(tokens),
               static_cast<double>(bytes) / static_cast<double>(std::max<std::uint64_t>(tokens, 1)), sw.seconds());
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Tokenizers: train a SentencePiece vocabulary on your text");
  cmd->require_subcommand(1);
  auto o = std::make_shared<TokenizerTrainOpts>();
  auto* t = cmd->add_subcommand("train", "Train a SentencePiece vocabulary (SentencePieceTrainer) and write DIR/tokenizer.model");
  t->add_option("--vocab", o->train.vocab_size, "Vocabulary size (pieces, including <unk>, <s>, </s> and any byte tokens)")
      ->required()->check(CLI::Range(8, 1 << 20));
  t->add_option("--in", o->train.inputs, "Text files to train on (the trainer reads them a line at a time)")->required();
  t->add_option("--out", o->out, "Folder to write tokenizer.model into")->required();
  t->add_option("--model-type", o->train.model_type, "bpe or unigram")->check(CLI::IsMember({"bpe", "unigram"}))->capture_default_str();
  t->add_flag("--byte-fallback", o->train.byte_fallback, "Spell characters outside the vocabulary as <0xNN> byte tokens (256 of the pieces)");
  t->add_option("--threads", o->train.threads, "Trainer threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  t->add_flag("--verbose", o->train.verbose, "The trainer's own progress log on stderr");
  t->add_flag("--force", o->force, "Overwrite an existing tokenizer.model");
  t->callback([o] { train(*o); });
}

}  // namespace orion::cli
