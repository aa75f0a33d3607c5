#pragma once
// The architecture options of a new model (--arch, --preset, --layers, --dim, --heads,
// --kv-heads, --context, --hidden, --vocab, --rope-theta, --tied, --tokenizer), declared once for
// `orion init` and `orion train --init`.
#include <CLI/CLI.hpp>

#include "model/model_init.h"

namespace orion::cli {

// Adds them to `app`, which may be an option group. Returns --arch's option, whose count() says
// whether it was given.
CLI::Option* add_architecture_options(CLI::App& app, model::InitOptions& o);

}  // namespace orion::cli
