#pragma once
// The syntax tree of a MIL program, as the MIL parser reads it (mil_parser.h) and before any
// meaning is given to it (mil_to_ir.h). Literal elements keep their text: what a number means
// depends on the dtype it is read as.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace orion::compile {

struct MilPos {
  std::int64_t line = 1;
  std::int64_t column = 1;
};

// `tensor<fp16, [1, 2]>`, or a scalar written `fp16` (rank 0, `scalar_spelling`).
struct MilType {
  std::string dtype;  // a MIL dtype name
  Shape shape;
  bool scalar_spelling = false;
  MilPos pos;
};

struct MilElement {
  enum class Kind : std::uint8_t { number, boolean, string } kind = Kind::number;
  std::string text;  // a number's spelling (inf, -inf, nan included), true/false, or a string's value
  MilPos pos;
};

// TYPE(value), TYPE([elements]) (nesting flattened) or TYPE(BLOBFILE(path = ..., offset = ...)).
struct MilLiteral {
  MilType type;
  std::vector<MilElement> elements;
  bool is_blob = false;
  std::string blob_path;
  std::uint64_t blob_offset = 0;
  MilPos pos;  // of the type
};

struct MilValue {
  enum class Kind : std::uint8_t { name, literal, tuple } kind = Kind::name;
  std::string name;                                    // Kind::name
  MilLiteral literal;                                  // Kind::literal
  std::vector<std::pair<std::string, MilPos>> tuple;  // Kind::tuple: value names
  MilPos pos;
};

struct MilNamedArg {
  std::string name;
  MilPos pos;
  MilValue value;
};

struct MilNamedLiteral {
  std::string name;
  MilPos pos;
  MilLiteral value;
};

struct MilVar {
  MilType type;
  std::string name;
  MilPos pos;  // of the name
};

struct MilOperation {
  std::vector<MilVar> outputs;  // one, or several for multi-output ops such as split
  std::string op;
  MilPos op_pos;
  std::vector<MilNamedArg> args;
  std::vector<MilNamedLiteral> attrs;  // the `[...]` block, possibly empty
};

struct MilFunction {
  std::string name;
  std::string opset;  // "ios18"
  MilPos pos;
  std::vector<MilVar> inputs;
  std::vector<MilOperation> ops;
  std::vector<std::pair<std::string, MilPos>> outputs;
};

struct MilAst {
  std::string version;  // "1.3"
  MilPos pos;
  std::vector<std::pair<std::string, std::string>> build_info;
  std::vector<MilFunction> functions;
};

}  // namespace orion::compile
