// orion init: a new model folder in Hugging Face's GPT-2 layout, with seeded random weights
// (GPT-2's initialisation) and tokenizer files. How tests get models, and how users start
// training from scratch.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "core/atomic_file.h"
#include "core/memory_limit.h"
#include "model/gpt2_model.h"
#include "model/safetensors.h"
#include "model_dir.h"

namespace orion::cli {

namespace {

namespace fs = std::filesystem;

struct InitOpts {
  std::string out;
  std::string arch = "gpt2";
  std::string preset;
  std::int64_t layers = 4, dim = 256, heads = 4, context = 256, vocab = 0, hidden = 0;
  std::uint64_t seed = 0;
  std::string tokenizer;
  bool force = false;
};

// Hugging Face's GPT-2 sizes.
bool apply_preset(InitOpts& o) {
  struct P { const char* name; std::int64_t layers, dim, heads; };
  for (const P& p : {P{"gpt2", 12, 768, 12}, P{"gpt2-medium", 24, 1024, 16}, P{"gpt2-large", 36, 1280, 20},
                     P{"gpt2-xl", 48, 1600, 25}})
    if (o.preset == p.name) {
      o.layers = p.layers;
      o.dim = p.dim;
      o.heads = p.heads;
      o.context = 1024;
      if (o.vocab == 0) o.vocab = 50257;
      return true;
    }
  return false;
}

void init(InitOpts o) {
  if (!o.preset.empty() && !apply_preset(o)) throw Error("unknown preset '" + o.preset + "'");
  const fs::path dir(o.out);
  for (const char* f : {"config.json", "model.safetensors"})
    if (fs::exists(dir / f) && !o.force)
      throw Error::in_file((dir / f).string(), "exists already (use --force to overwrite)");

  const text::BpeTokenizer tok = o.tokenizer.empty() ? text::BpeTokenizer::byte_level() : load_tokenizer(o.tokenizer);
  model::Gpt2Config c;
  c.n_layer = o.layers;
  c.n_embd = o.dim;
  c.n_head = o.heads;
  c.n_positions = o.context;
  c.n_inner = o.hidden;
  c.vocab_size = o.vocab > 0 ? o.vocab : tok.vocab_size();
  c.eos_token_id = tok.eot_id();
  if (c.vocab_size < tok.vocab_size())
    throw Error("--vocab " + std::to_string(c.vocab_size) + " is smaller than the tokenizer's " +
                std::to_string(tok.vocab_size()) + " tokens");
  c.validate("orion init");
  check_fits_in_memory(c.weight_bytes(sizeof(float)), "the weights (f32)", "orion init");

  Stopwatch sw;
  fs::create_directories(dir);
  exec::Bindings w = model::gpt2_init_weights(c, o.seed);
  std::vector<std::pair<std::string, Tensor>> tensors(w.begin(), w.end());
  model::write_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
  write_file_atomic((dir / "config.json").string(), model::gpt2_config_json(c));
  tok.save(dir.string());
  std::printf("wrote %s: gpt2, %lld layers, dim %lld, %lld heads, context %lld, vocab %lld, %.1fM params, seed %llu (%.1f s)\n",
              dir.string().c_str(), static_cast<long long>(c.n_layer), static_cast<long long>(c.n_embd),
              static_cast<long long>(c.n_head), static_cast<long long>(c.n_positions),
              static_cast<long long>(c.vocab_size), static_cast<double>(c.parameter_count()) / 1e6,
              static_cast<unsigned long long>(o.seed), sw.seconds());
}

}  // namespace

void add_init_command(CLI::App& app) {
  auto o = std::make_shared<InitOpts>();
  auto* cmd = app.add_subcommand("init", "Write a new model folder with seeded random weights (Hugging Face layout)");
  cmd->add_option("-o,--out", o->out, "Model folder to write")->required();
  cmd->add_option("--arch", o->arch, "Architecture")->check(CLI::IsMember({"gpt2"}))->capture_default_str();
  cmd->add_option("--preset", o->preset, "Sizes of a known model: gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl")
      ->check(CLI::IsMember({"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}));
  cmd->add_option("--layers", o->layers, "Transformer blocks")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--dim", o->dim, "Model width (n_embd)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--heads", o->heads, "Attention heads")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--context", o->context, "Context length (n_positions)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "MLP width (0: 4 x dim)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--vocab", o->vocab, "Vocabulary size (0: the tokenizer's)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights")->capture_default_str();
  cmd->add_option("--tokenizer", o->tokenizer,
                  "Folder with vocab.json and merges.txt to use (default: a byte-level vocabulary of 257 tokens)");
  cmd->add_flag("--force", o->force, "Overwrite an existing model in the folder");
  cmd->callback([o] { init(*o); });
}

}  // namespace orion::cli
