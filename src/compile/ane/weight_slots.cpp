#include "compile/ane/weight_slots.h"

#include <set>
#include <string_view>

namespace orion::compile {

namespace {

// The elementwise ops an inline scalar operand costs a slot in (the report names add, mul and
// pow, and says the cost goes with the scalar operand, not the opcode).
bool is_elementwise_binary(std::string_view op) {
  return op == "add" || op == "sub" || op == "mul" || op == "real_div" || op == "pow" || op == "maximum" ||
         op == "minimum";
}

}  // namespace

WeightSlots count_weight_slots(const MilFunction& f) {
  WeightSlots s;
  std::set<std::string> inline_consts;  // consts whose value is written in the text
  const MilOperation* current = nullptr;
  const auto note = [&](const MilLiteral& lit) {
    if (!lit.is_blob) return;
    ++s.blobfile_tensors;
    s.names.push_back(current->outputs.empty() ? current->op : current->outputs[0].name);
    ++s.tensors_per_file[lit.blob_path];
  };
  for (const MilOperation& op : f.ops) {
    current = &op;
    bool blob = false;
    for (const MilNamedLiteral& a : op.attrs) {
      note(a.value);
      blob = blob || a.value.is_blob;
    }
    for (const MilNamedArg& a : op.args)
      if (a.value.kind == MilValue::Kind::literal) {
        note(a.value.literal);
        blob = blob || a.value.literal.is_blob;
      }
    if (op.op == "const" && !blob)
      for (const MilVar& v : op.outputs) inline_consts.insert(v.name);
    if (!s.scalar_operand && is_elementwise_binary(op.op))
      for (const MilNamedArg& a : op.args) {
        if (a.name != "x" && a.name != "y") continue;
        const bool scalar = (a.value.kind == MilValue::Kind::literal && !a.value.literal.is_blob) ||
                            (a.value.kind == MilValue::Kind::name && inline_consts.contains(a.value.name));
        if (scalar) {
          s.scalar_operand = true;
          s.scalar_at = op.op_pos;
          break;
        }
      }
  }
  return s;
}

}  // namespace orion::compile
