#pragma once
// The --numerics option shared by the commands that run graphs.
#include <string>

#include <CLI/CLI.hpp>

#include "exec/cpu/executor.h"

namespace orion::cli {

void add_numerics_option(CLI::App* cmd, std::string& numerics);
exec::Numerics parse_numerics(const std::string& numerics);

}  // namespace orion::cli
