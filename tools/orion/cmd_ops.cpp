// orion ops: the op table as users see it (names, inputs, attributes with defaults).
#include <cstdio>

#include "commands.h"
#include "ir/op_table.h"

namespace orion::cli {

namespace {

std::string arity(const ir::OpInfo& op) {
  if (op.max_inputs < 0) return std::to_string(op.min_inputs) + "+";
  return std::to_string(op.min_inputs);
}

std::string attrs(const ir::OpInfo& op) {
  std::string s;
  for (const ir::AttrSpec& a : op.attrs) {
    if (!s.empty()) s += ", ";
    s += std::string(a.name) + ": " + std::string(ir::attr_kind_name(a.kind));
    if (a.required) continue;
    char buf[64];
    switch (a.kind) {
      case ir::AttrKind::integer: std::snprintf(buf, sizeof buf, " = %lld", static_cast<long long>(a.default_number)); break;
      case ir::AttrKind::real: std::snprintf(buf, sizeof buf, " = %g", a.default_number); break;
      case ir::AttrKind::boolean: std::snprintf(buf, sizeof buf, " = %s", a.default_number != 0 ? "true" : "false"); break;
      default: std::snprintf(buf, sizeof buf, " = %s", std::string(a.default_text).c_str()); break;
    }
    s += buf;
  }
  return s;
}

}  // namespace

void add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the IR's ops: inputs, attributes and meaning");
  cmd->callback([] {
    std::printf("%-12s %-6s %-44s %s\n", "op", "inputs", "attributes", "meaning");
    for (const ir::OpInfo& op : ir::all_ops())
      std::printf("%-12s %-6s %-44s %s\n", std::string(op.name).c_str(), arity(op).c_str(),
                  attrs(op).c_str(), std::string(op.doc).c_str());
  });
}

}  // namespace orion::cli
