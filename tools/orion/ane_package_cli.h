#pragma once
// The options that shape a compiled ANE package, shared by `orion compile --target ane` and the
// commands that compile one on the fly (`orion perplexity --device ane-sim`), and the one call
// that compiles a model (GPT-2 or Llama) into a package folder.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "compile/ane/ane_package_writer.h"
#include "model/causal_lm.h"

namespace orion::cli {

struct AnePackageOptions {
  std::int64_t seq = 128;     // prefill window
  std::int64_t context = 0;   // decode cache slots; 0: the model's context - 1
  bool host_attention = false;  // model::AnePackageShape::host_attention
  std::string dialect = "ios18";
  bool m1_m2 = false;
  bool allow_concat = false;
  double on_chip_mb = 32.0;
};

void add_ane_package_options(CLI::App* cmd, AnePackageOptions& o);

// Compiles `model` (read from `source`, which the manifest names) into the package folder `out` (replaced when `replace`); prints a line per
// step to stderr when `progress`. Returns the writer's report.
compile::PackageReport compile_package(const model::CausalLm& model, const std::string& source, const AnePackageOptions& o,
                                            const std::string& out, bool replace, bool progress);

}  // namespace orion::cli
