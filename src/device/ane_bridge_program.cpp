#include "device/ane_bridge_program.h"

#include <algorithm>
#include <filesystem>

#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_syntax.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace orion::device {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kModelPath = "@model_path/";

[[noreturn]] void fail(const std::string& file, const compile::MilPos& pos, const std::string& message) {
  throw Error::at_line(file, pos.line, pos.column, message);
}

ir::TensorType io_type(const compile::MilVar& v, const std::string& file) {
  const auto dtype = compile::ir_dtype_from_mil(v.type.dtype);
  if (!dtype)
    fail(file, v.type.pos, "input or output '" + v.name + "' has dtype " + v.type.dtype + ", which no surface holds");
  return {*dtype, v.type.shape};
}

void sort_by_name(std::vector<AneIo>& io) {
  std::sort(io.begin(), io.end(), [](const AneIo& a, const AneIo& b) { return a.name < b.name; });
}

// The file under the folder that a BLOBFILE path names. The text is untrusted: a path that
// leaves the folder would hand the framework (and our reader) an arbitrary file.
std::string relative_blob_path(const compile::MilLiteral& lit, const std::string& file) {
  if (lit.blob_path.rfind(kModelPath, 0) != 0)
    fail(file, lit.pos, "BLOBFILE path '" + lit.blob_path + "' does not start with " + std::string(kModelPath));
  const fs::path rel = fs::path(lit.blob_path.substr(kModelPath.size())).lexically_normal();
  if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
    fail(file, lit.pos, "BLOBFILE path '" + lit.blob_path + "' leaves the program's folder");
  return rel.generic_string();
}

}  // namespace

AneProgramSource read_program_folder(const std::string& folder) {
  AneProgramSource src;
  src.folder = folder;
  const std::string mil_path = (fs::path(folder) / "model.mil").string();
  {
    const auto file = MappedFile::open(mil_path);
    src.mil_text.assign(reinterpret_cast<const char*>(file->bytes().data()), file->size());
  }
  const compile::MilAst ast = compile::parse_mil_ast(src.mil_text, mil_path);
  if (ast.functions.size() != 1 || ast.functions[0].name != "main")
    fail(mil_path, ast.pos, "the program must have exactly one function, main");
  const compile::MilFunction& fn = ast.functions[0];

  for (const compile::MilVar& v : fn.inputs) src.inputs.push_back({v.name, io_type(v, mil_path)});
  for (const auto& [name, pos] : fn.outputs) {
    const compile::MilVar* produced = nullptr;
    for (const compile::MilOperation& op : fn.ops)
      for (const compile::MilVar& v : op.outputs)
        if (v.name == name) produced = &v;
    if (!produced) fail(mil_path, pos, "output '" + name + "' is not produced in the body");
    src.outputs.push_back({name, io_type(*produced, mil_path)});
  }
  sort_by_name(src.inputs);
  sort_by_name(src.outputs);

  const auto add_blob = [&](const compile::MilLiteral& lit) {
    if (!lit.is_blob) return;
    const std::string rel = relative_blob_path(lit, mil_path);
    const std::string key = std::string(kModelPath) + rel;
    if (std::any_of(src.weights.begin(), src.weights.end(), [&](const AneWeightFile& w) { return w.key == key; }))
      return;
    const auto file = MappedFile::open((fs::path(folder) / rel).string());
    src.weights.push_back({key, rel, {file->bytes().begin(), file->bytes().end()}});
  };
  for (const compile::MilOperation& op : fn.ops) {
    for (const compile::MilNamedLiteral& a : op.attrs) add_blob(a.value);
    for (const compile::MilNamedArg& a : op.args)
      if (a.value.kind == compile::MilValue::Kind::literal) add_blob(a.value.literal);
  }
  return src;
}

}  // namespace orion::device
