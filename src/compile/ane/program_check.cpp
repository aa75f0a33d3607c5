#include "compile/ane/program_check.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_to_ir.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace orion::compile {

namespace fs = std::filesystem;

namespace {

std::string at(const std::string& file, const MilPos& p) {
  return file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

// The IR name mil_to_ir gives a MIL variable ('@' is not an IR name character).
std::string ir_name(std::string name) {
  std::replace(name.begin(), name.end(), '@', '_');
  return name;
}

}  // namespace

int ProgramVerdict::errors() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(),
                                        [](const ProgramFinding& f) { return f.violation.is_error(); })) +
         (unreadable.empty() ? 0 : 1);
}

ProgramVerdict check_program_folder(const std::string& folder, const AneTarget& target) {
  ProgramVerdict v;
  v.mil_path = (fs::path(folder) / "model.mil").string();
  const auto file = MappedFile::open(v.mil_path);
  const std::string_view text(reinterpret_cast<const char*>(file->bytes().data()), file->size());
  const MilAst ast = parse_mil_ast(text, v.mil_path);

  // Where each value of the program is written: graph-stage findings name IR nodes.
  std::map<std::string, MilPos> written;
  for (const MilFunction& fn : ast.functions) {
    if (fn.name != "main") continue;
    v.inputs = fn.inputs;
    v.slots = count_weight_slots(fn);
    for (const auto& [path, tensors] : v.slots.tensors_per_file)
      v.weight_files.push_back(path.rfind("@model_path/", 0) == 0 ? path.substr(12) : path);
    for (const MilVar& in : fn.inputs) written.emplace(ir_name(in.name), in.pos);
    for (const MilOperation& op : fn.ops) {
      ++v.ops;
      for (const MilVar& out : op.outputs) written.emplace(ir_name(out.name), op.op_pos);
    }
    for (const auto& [name, pos] : fn.outputs) {
      MilVar out;
      out.name = name;
      out.pos = pos;
      for (const MilOperation& op : fn.ops)
        for (const MilVar& o : op.outputs)
          if (o.name == name) out.type = o.type;
      v.outputs.push_back(out);
    }
  }

  // MIL-stage findings say "FILE:LINE:COL op" in their `where` already.
  for (AneViolation& m : check_mil_program(ast, target, v.mil_path)) {
    std::string place = m.where.substr(0, m.where.find(' '));
    v.findings.push_back({std::move(m), std::move(place)});
  }
  std::optional<ir::Graph> read;
  try {
    read.emplace(mil_to_ir(ast, v.mil_path, folder));
  } catch (const Error& e) {
    v.unreadable = e.what();
    return v;
  }
  const ir::Graph& graph = *read;
  for (AneViolation& g : check_kernel_graph(graph, target)) {
    std::string place = v.mil_path;
    if (g.node >= 0) {
      const auto it = written.find(graph.node(g.node).name);
      if (it != written.end()) place = at(v.mil_path, it->second);
    }
    v.findings.push_back({std::move(g), std::move(place)});
  }
  return v;
}

std::string describe_finding(const ProgramFinding& f) {
  const AneViolation& v = f.violation;
  std::string where = v.where;
  // A MIL-stage `where` starts with the place itself: keep only what follows it.
  if (where.rfind(f.at, 0) == 0) where = where.substr(f.at.size());
  while (!where.empty() && where.front() == ' ') where.erase(0, 1);
  std::string s = std::string(v.is_error() ? "error" : "warning") + " " + std::string(v.rule->id) + " " + f.at;
  if (!where.empty()) s += " " + where;
  s += ": " + v.problem + "\n  rule: " + std::string(v.rule->summary) + " (on the device: " +
       std::string(ane_failure_name(v.rule->failure)) + ")\n  fix: " + std::string(v.rule->fix) +
       "\n  source: " + std::string(v.rule->source) + "\n";
  return s;
}

}  // namespace orion::compile
