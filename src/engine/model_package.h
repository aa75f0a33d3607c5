#pragma once
// A model compiled into an ANE package folder: the options that shape the package (shared by
// `orion compile --target ane` and the commands that compile on the fly), the one call that
// compiles a GPT-2 or Llama model, and the content key the package cache finds it by.
#include <cstdint>
#include <optional>
#include <string>

#include "compile/ane/ane_package_writer.h"
#include "model/causal_lm.h"
#include "model/lora/lora_config.h"

namespace orion::engine {

struct AnePackageOptions {
  std::int64_t seq = 128;     // prefill window
  std::int64_t context = 0;   // decode cache slots; 0: the model's context - 1
  bool host_attention = false;  // model::AnePackageShape::host_attention
  std::int64_t batch = 0;       // model::AnePackageShape::batch: > 1 adds a decode_batch program
  std::int64_t chunk = 0;       // model::AnePackageShape::chunk: > 1 adds an extend program
  std::string dialect = "ios18";
  bool m1_m2 = false;
  bool allow_concat = false;
  double on_chip_mb = 32.0;
  // "fp16", or baked weights in fewer bits dequantized in the kernel (compile::WeightForm):
  // "int8", "int4", "uint4" (ios18 ops), "lut4"; weight_block as compile::AneTarget's, -1 the
  // form's default (compile::default_weight_block).
  std::string weights = "fp16";
  std::int64_t weight_block = -1;
  // "baked", "inputs" (compile::KernelWeights), or "auto": baked while the kernels fit the
  // compile budget.
  std::string ane_weights = "auto";
  // Kernels for LoRA adapters of this rank and these targets: the base weights baked, the
  // adapters' matrices kernel inputs (model::lora_runtime_weights; alpha is in them).
  std::optional<model::LoraConfig> lora;
};

// Compiles `model` (read from `source`, which the manifest names) into the package folder `out`
// (replaced when `replace`); prints a line per step to stderr when `progress`. Returns the
// writer's report.
compile::PackageReport compile_model_package(const model::CausalLm& model, const std::string& source,
                                             const AnePackageOptions& o, const std::string& out, bool replace,
                                             bool progress);

// Everything a package depends on: the package format, the compiler (this executable), the
// model's architecture, shape and weights, and the options that shape the package.
std::string package_key(const model::CausalLm& model, const AnePackageOptions& o);

}  // namespace orion::engine
