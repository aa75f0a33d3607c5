#pragma once
// Making a new model folder with seeded random weights: what `orion init` does, and `orion train
// --init` before it trains.
#include <cstdint>
#include <string>

namespace orion::model {

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

// Writes the model folder o.out as a whole (a kill leaves the old folder or the new one) and
// returns one line saying what it wrote. Throws orion::Error for options that do not make a
// model, a folder holding files that are not a model's, an existing model without o.force, or
// a model larger than the machine's memory.
std::string init_model(InitOptions o);

}  // namespace orion::model
