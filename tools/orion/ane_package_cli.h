#pragma once
// The options of a compiled ANE package and of a model run on a device (engine/), declared once
// for `orion compile --target ane` and the commands that compile on the fly (generate,
// perplexity).
#include <CLI/CLI.hpp>

#include "engine/device_run.h"
#include "engine/model_package.h"

namespace orion::cli {

// `kernel_weights_names`: the option choosing the kernel weights' form, fp16, int8, int4, uint4
// or lut4 ("--weights" too for `orion compile`, where no CPU weight format takes that name).
void add_ane_package_options(CLI::App* cmd, engine::AnePackageOptions& o,
                             const std::string& kernel_weights_names = "--kernel-weights");
// --package, --ane-prefill, --no-cache and the package options.
void add_device_run_options(CLI::App* cmd, engine::DeviceRunOptions& o);

}  // namespace orion::cli
