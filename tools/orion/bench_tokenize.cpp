// orion bench tokenize: byte-level BPE encoding throughput on one core, on a text file.
#include <cstdio>

#include "bench_commands.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "model/model_folder.h"

namespace orion::cli {

void add_bench_tokenize_command(CLI::App& bench) {
  struct Opts {
    std::string model_dir, file;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = bench.add_subcommand("tokenize", "Encoding throughput of a model's tokenizer on a text file (one thread)");
  cmd->add_option("-m,--model", o->model_dir, "Folder with vocab.json and merges.txt (or encoder.json and vocab.bpe)")->required();
  cmd->add_option("-f,--file", o->file, "Text to encode")->required();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    const text::BpeTokenizer tok = model::load_bpe_tokenizer(o->model_dir);
    const auto file = MappedFile::open(o->file);
    const std::string_view text(reinterpret_cast<const char*>(file->bytes().data()), file->size());
    // The first encode of a fresh tokenizer runs with an empty word cache: the cold figure.
    const text::BpeTokenizer fresh = model::load_bpe_tokenizer(o->model_dir);
    Stopwatch sw;
    const std::size_t tokens = fresh.encode(text).size();
    const double cold = static_cast<double>(text.size()) / sw.seconds() / 1e6;
    const double warm = text::measure_encode_mb_per_s(tok, text);
    if (o->json)
      std::printf("{\"bytes\": %zu, \"tokens\": %zu, \"cold_mb_per_s\": %.2f, \"warm_mb_per_s\": %.2f}\n",
                  text.size(), tokens, cold, warm);
    else
      std::printf("%s: %zu bytes, %zu tokens (%.2f bytes/token); encode %.1f MB/s cold cache, %.1f MB/s warm (median), one thread\n",
                  o->file.c_str(), text.size(), tokens, static_cast<double>(text.size()) / static_cast<double>(std::max<std::size_t>(tokens, 1)),
                  cold, warm);
  });
}

}  // namespace orion::cli
