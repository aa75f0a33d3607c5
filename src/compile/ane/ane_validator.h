#pragma once
// The validator: checks a kernel's graph in ANE form against every graph-stage rule of the
// catalogue (ane_rules.h) and refuses to let a program that breaks one reach the MIL writer.
// Every message names the rule, the node ("%name (op)") and the fix.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compile/ane/ane_rules.h"
#include "compile/target.h"
#include "compile/mil/mil_ast.h"
#include "ir/graph.h"

namespace orion::compile {

struct AneViolation {
  const AneRule* rule = nullptr;
  std::string where;    // "%name (op)", or "kernel" for rules about the whole kernel
  std::string problem;  // what is wrong, without the fix
  ir::ValueId node = -1;  // the node of a graph-stage violation, if it is about one

  bool is_error() const { return ane_rule_is_error(*rule); }
  // "ANE005 %w (conv): the weight is %x (input), not a const. Fix: ..."
  std::string message() const;
};

// Every violation of a graph-stage rule, errors and warnings, in node order.
std::vector<AneViolation> check_kernel_graph(const ir::Graph& kernel, const AneTarget& target);

// Every violation of a MIL-stage rule in a parsed program (`file` names it in messages:
// "FILE:LINE:COL op").
std::vector<AneViolation> check_mil_program(const MilAst& program, const AneTarget& target,
                                            std::string_view file);

// Throws orion::Error listing every error of `violations` (the first line names kernel `name`);
// returns the warnings for the caller to report.
std::vector<AneViolation> refuse_errors(std::vector<AneViolation> violations, std::string_view name);

// refuse_errors(check_kernel_graph(kernel, target), name).
std::vector<AneViolation> validate_kernel_graph(const ir::Graph& kernel, const AneTarget& target,
                                                std::string_view name);

}  // namespace orion::compile
