// orion check: parse and verify an IR text file; summarise it or print it in canonical form.
#include <cstdio>
#include <map>

#include "commands.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace orion::cli {

void add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "Parse and verify an IR text file (.oir)");
  auto file = std::make_shared<std::string>();
  auto print = std::make_shared<bool>(false);
  cmd->add_option("file", *file, "IR text file")->required();
  cmd->add_flag("--print", *print, "Print the graph in canonical text form instead of a summary");
  cmd->callback([file, print] {
    const ir::Graph g = ir::read_graph_file(*file);
    if (*print) {
      std::fputs(ir::print_graph(g).c_str(), stdout);
      return;
    }
    std::map<std::string_view, int> counts;
    for (const ir::Node& n : g.nodes()) ++counts[n.info().name];
    std::printf("%s: graph %s is valid: %d nodes, %zu inputs, %zu params, %zu outputs\n",
                file->c_str(), g.name().c_str(), g.size(), g.nodes_of(ir::Op::input).size(),
                g.nodes_of(ir::Op::param).size(), g.outputs().size());
    std::string ops;
    for (const auto& [name, count] : counts) ops += " " + std::string(name) + "=" + std::to_string(count);
    std::printf("ops:%s\n", ops.c_str());
  });
}

}  // namespace orion::cli
