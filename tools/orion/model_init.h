#pragma once
// Making a new model folder with seeded random weights: what `orion init` does, and `orion train
// --init` before it trains. The architecture options are declared once here for both commands.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace orion::cli {

struct InitOptions {
  std::string out;  // the model folder to write
  std::string arch = "gpt2";
  bool arch_given = false;  // --arch was on the command line (a preset must then agree with it)
  std::string preset;
  std::int64_t layers = 4, dim = 256, heads = 4, kv_heads = 0, context = 256, vocab = 0, hidden = 0;
  double rope_theta = 10000.0;
  bool tied = false;
  std::uint64_t seed = 0;
  std::string tokenizer;
  bool force = false;  // replace an existing model in `out`
};

// Adds the architecture options (--arch, --preset, --layers, --dim, --heads, --kv-heads,
// --context, --hidden, --vocab, --rope-theta, --tied, --tokenizer) to `app`, which may be an
// option group. Returns --arch's option, whose count() says whether it was given.
CLI::Option* add_architecture_options(CLI::App& app, InitOptions& o);

// Writes the model folder o.out as a whole (a kill leaves the old folder or the new one) and
// prints one line saying what it wrote. Throws orion::Error for options that do not make a
// model, a folder holding files that are not a model's, an existing model without o.force, or
// a model larger than the machine's memory.
void init_model(InitOptions o);

}  // namespace orion::cli
