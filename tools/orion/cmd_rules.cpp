// orion rules: the ANE constraint catalogue (compile/ane/ane_rules.h), as a table or as the
// Markdown page docs/ane/RULES.md is generated from.
#include <cstdio>
#include <string>

#include "commands.h"
#include "compile/ane/ane_rules.h"

namespace orion::cli {

void add_rules_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("rules", "List the ANE rules the compiler and runtime enforce");
  auto markdown = std::make_shared<bool>(false);
  cmd->add_flag("--markdown", *markdown, "Print docs/ane/RULES.md (the catalogue as Markdown)");
  cmd->callback([markdown] {
    if (*markdown) {
      std::fputs(compile::ane_rules_markdown().c_str(), stdout);
      return;
    }
    std::printf("%-7s %-9s %-8s %s\n", "id", "failure", "checked", "rule");
    for (const compile::AneRule& r : compile::ane_rules())
      std::printf("%-7s %-9s %-8s %s\n", std::string(r.id).c_str(),
                  std::string(compile::ane_failure_name(r.failure)).c_str(),
                  std::string(compile::ane_stage_name(r.stage)).c_str(), std::string(r.summary).c_str());
  });
}

}  // namespace orion::cli
