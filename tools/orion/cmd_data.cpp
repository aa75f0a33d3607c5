// orion data prepare: text files tokenized with a model folder's tokenizer into a token file
// (docs/FORMATS.md, "Token files") with a held-out validation split, the trainer's input; or
// JSONL data (train/data/jsonl_records.h) into a record file with its loss mask.
// orion data stats: what a token file or JSONL data holds: records, tokens, trained tokens,
// records cut at --seq, the length distribution.
#include <cstdio>
#include <memory>
#include <optional>
#include <unistd.h>

#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "train/data/corpus_prepare.h"
#include "train/data/jsonl_records.h"
#include "train/data/record_stats.h"
#include "train/data/token_file.h"

namespace orion::cli {

namespace {

struct PrepareOpts {
  std::string model_dir, out;
  std::vector<std::string> inputs;
  double val_fraction = 0.05;
  bool mask_prompt = false;
};

struct StatsOpts {
  std::string data, model_dir;
  std::int64_t seq = 2048;
  bool mask_prompt = false, json = false;
};

constexpr double kMB = 1e6;

// The live line on stderr, only on a terminal and only for inputs that take a while.
class ProgressLine {
 public:
  void update(std::size_t done, std::size_t total) {
    if (!shown_) {  // the first update, before any byte is encoded: the rate counts from here
      shown_ = total >= 4 * 1000 * 1000 && ::isatty(2);
      sw_.restart();
      return;
    }
    if (!*shown_ || (done < total && sw_.seconds() < last_ + 0.2)) return;
    last_ = sw_.seconds();
    std::fprintf(stderr, "\rtokenizing: %.1f / %.1f MB (%3.0f%%), %.1f MB/s ", static_cast<double>(done) / kMB,
                 static_cast<double>(total) / kMB, 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<double>(done) / kMB / std::max(last_, 1e-9));
  }
  ~ProgressLine() {
    if (shown_.value_or(false)) std::fprintf(stderr, "\n");
  }

 private:
  std::optional<bool> shown_;  // decided at the first update, which brings the total
  Stopwatch sw_;
  double last_ = -1.0;
};

void prepare_jsonl(const PrepareOpts& o) {
  if (o.inputs.size() != 1) throw Error("--in takes one JSONL folder or .jsonl file");
  Stopwatch sw;
  const train::PreparedJsonl p = train::prepare_jsonl(o.model_dir, o.inputs[0], o.mask_prompt, o.out);
  std::printf("wrote %s: %llu tokens; train %zu %s records", o.out.c_str(), static_cast<unsigned long long>(p.tokens),
              p.train.records, p.train.format.c_str());
  if (p.valid.records) std::printf(", valid %zu", p.valid.records);
  if (p.test.records) std::printf(", test %zu", p.test.records);
  std::printf("; loss mask: %s; %.2f s\n", o.mask_prompt ? "answers only (--mask-prompt)" : "every token", sw.seconds());
}

void prepare(const PrepareOpts& o) {
  if (o.inputs.size() == 1 && train::is_jsonl_data(o.inputs[0])) return prepare_jsonl(o);
  if (o.mask_prompt) throw Error("--mask-prompt applies to JSONL data (a folder with train.jsonl, or a .jsonl file)");
  train::PreparedCorpus p;
  {
    ProgressLine progress;
    p = train::prepare_corpus(o.model_dir, o.inputs, o.val_fraction, o.out,
                              [&](std::size_t done, std::size_t total) { progress.update(done, total); });
  }
  const std::uint64_t tokens = p.train_tokens + p.val_tokens;
  std::printf("wrote %s: %llu tokens from %zu file%s (%.2f MB): %llu training, %llu validation (%.1f%%); "
              "%.2f bytes per token; vocabulary %llu (%u-byte tokens); %.2f s (%.1f MB/s tokenizing)\n",
              o.out.c_str(), static_cast<unsigned long long>(tokens), p.files, p.files == 1 ? "" : "s",
              static_cast<double>(p.bytes) / kMB, static_cast<unsigned long long>(p.train_tokens),
              static_cast<unsigned long long>(p.val_tokens), 100.0 * static_cast<double>(p.val_tokens) / static_cast<double>(tokens),
              static_cast<double>(p.bytes) / static_cast<double>(tokens), static_cast<unsigned long long>(p.vocab_size),
              train::token_width_for(p.vocab_size), p.seconds, static_cast<double>(p.bytes) / kMB / p.tokenize_seconds);
}

void print_records_stats(const char* split, const train::RecordStats& s, std::int64_t seq, bool json) {
  using ull = unsigned long long;
  if (json) {
    std::printf("\"%s\": {\"records\": %zu, \"tokens\": %llu, \"trained_tokens\": %llu, \"truncated\": %zu, "
                "\"trained_tokens_kept\": %llu, \"length\": {\"min\": %llu, \"p50\": %llu, \"p90\": %llu, \"p99\": %llu, \"max\": %llu}}",
                split, s.records, static_cast<ull>(s.tokens), static_cast<ull>(s.trained_tokens), s.truncated,
                static_cast<ull>(s.trained_tokens_kept), static_cast<ull>(s.min_length), static_cast<ull>(s.p50),
                static_cast<ull>(s.p90), static_cast<ull>(s.p99), static_cast<ull>(s.max_length));
    return;
  }
  std::printf("%s: %zu records, %llu tokens, %llu trained (%.1f%%); %zu longer than --seq %lld + 1 would be cut "
              "(%llu trained tokens kept)\n  length: min %llu, median %llu, p90 %llu, p99 %llu, max %llu\n",
              split, s.records, static_cast<ull>(s.tokens), static_cast<ull>(s.trained_tokens),
              100.0 * static_cast<double>(s.trained_tokens) / static_cast<double>(std::max<std::uint64_t>(s.tokens, 1)),
              s.truncated, static_cast<long long>(seq), static_cast<ull>(s.trained_tokens_kept), static_cast<ull>(s.min_length),
              static_cast<ull>(s.p50), static_cast<ull>(s.p90), static_cast<ull>(s.p99), static_cast<ull>(s.max_length));
  for (const train::LengthBin& b : s.histogram)
    std::printf("  %6llu-%-6llu %7zu  %s\n", static_cast<ull>(b.lo + 1), static_cast<ull>(b.hi), b.records,
                std::string(std::max<std::size_t>(1, 50 * b.records / s.records), '#').c_str());
}

void stats(const StatsOpts& o) {
  std::string file = o.data;
  std::optional<TempFolder> temp;
  if (train::is_jsonl_data(o.data)) {
    if (o.model_dir.empty()) throw Error(o.data + ": JSONL data is tokenized for a model: give -m DIR");
    temp.emplace("orion-data-stats");
    file = temp->path() + "/data.tok";
    train::prepare_jsonl(o.model_dir, o.data, o.mask_prompt, file);
  } else if (o.mask_prompt) {
    throw Error("--mask-prompt applies to JSONL data (a token file's mask was made when it was prepared)");
  }
  const train::TokenFile f = train::TokenFile::open(file);
  if (!f.has_records()) {
    if (o.json)
      std::printf("{\"records\": null, \"train_tokens\": %llu, \"val_tokens\": %llu}\n",
                  static_cast<unsigned long long>(f.size(train::Split::train)), static_cast<unsigned long long>(f.size(train::Split::val)));
    else
      std::printf("%s: a token stream: %llu training tokens, %llu validation tokens, vocabulary %llu\n", o.data.c_str(),
                  static_cast<unsigned long long>(f.size(train::Split::train)),
                  static_cast<unsigned long long>(f.size(train::Split::val)), static_cast<unsigned long long>(f.vocab_size()));
    return;
  }
  if (o.json) std::printf("{");
  bool first = true;
  for (train::Split s : {train::Split::train, train::Split::val, train::Split::test}) {
    if (f.size(s) == 0) continue;
    if (o.json && !first) std::printf(", ");
    first = false;
    print_records_stats(train::split_name(s), train::record_stats(f.records(s), o.seq), o.seq, o.json);
  }
  if (o.json) std::printf("}\n");
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Training data: tokenize a corpus or JSONL records into a token file; its stats");
  data->require_subcommand(1);
  auto o = std::make_shared<PrepareOpts>();
  auto* cmd = data->add_subcommand(
      "prepare",
      "Tokenize text files (one document each, separated by end-of-text) into a token file whose validation "
      "split is the last --val-fraction of each document's tokens");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (or GGUF file) whose tokenizer to use")->required();
  cmd->add_option("--in", o->inputs,
                  "Text files, one document each; or one JSONL folder (train.jsonl, valid.jsonl, test.jsonl) or .jsonl file")
      ->required();
  cmd->add_flag("--mask-prompt", o->mask_prompt, "JSONL: the loss mask covers the answers only");
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

  auto so = std::make_shared<StatsOpts>();
  auto* st = data->add_subcommand("stats", "What a token file or JSONL data holds: records, tokens, trained tokens, lengths");
  st->add_option("data", so->data, "Token file, or JSONL data (with -m)")->required();
  st->add_option("-m,--model", so->model_dir, "Model folder whose tokenizer and chat template JSONL data is read with");
  st->add_option("--seq", so->seq, "The training --seq: records longer than it + 1 are counted as cut")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  st->add_flag("--mask-prompt", so->mask_prompt, "JSONL: count the answers only as trained");
  st->add_flag("--json", so->json, "Print one JSON object");
  st->callback([so] { stats(*so); });
}

}  // namespace orion::cli
