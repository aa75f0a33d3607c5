#pragma once
// The parser of the IR text form, the format print_graph writes and `orion check` reads.
//
//   # a comment runs to the end of the line
//   graph NAME {
//     %x = input() : f32[16, 64]
//     %w = param() : f32[64, 64]
//     %c = const() {value = [0.5, 1, -inf]} : f32[3]
//     %h = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[16, 64]
//     return %h, %x
//   }
//
// Grammar (white space, line breaks included, and comments may come between any two tokens):
//
//   graph     := 'graph' IDENT '{' node* [ 'return' VALUE (',' VALUE)* ] '}'
//   node      := VALUE '=' OP '(' [ VALUE (',' VALUE)* ] ')' [ '{' [ attr (',' attr)* ] '}' ] ':' type
//   attr      := IDENT '=' attrvalue
//   attrvalue := INTEGER | REAL | 'true' | 'false' | STRING | DTYPE
//              | '[' [ INTEGER (',' INTEGER)* ] ']'          (integer list)
//              | '[' [ element (',' element)* ] ']'          (tensor: attributes of kind tensor)
//   element   := NUMBER | 'inf' | '-inf' | 'nan' | '-nan' | 'true' | 'false'
//   type      := DTYPE '[' [ INTEGER (',' INTEGER)* ] ']'    (f32[16, 64]; a scalar is f32[])
//
//   IDENT   [A-Za-z_][A-Za-z0-9_.]*  (at most 4096 characters)
//   VALUE   '%' IDENT, the name of a node's value
//   OP      an op's name in the op table (op_info(op).name; the constant op is "const")
//   DTYPE   f32 f16 bf16 i32 i8 u8 bool
//   NUMBER  -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?; INTEGER is one without '.' and exponent
//   REAL    a NUMBER, or inf -inf nan -nan
//   STRING  "..." on one line, with the escapes \" \\ \n \t; other bytes stand for themselves
//
// Meaning:
// - Values are defined before they are used (text order is node order) and each name is
//   defined once. `return` is optional in the syntax; a graph without outputs then fails
//   verification.
// - Every node states its type after ':'. For sources (input, param, const) that is their type;
//   for the other ops the parser infers the type from the inputs and the attributes and
//   reports a difference at the stated type.
// - Attributes may be given in any order; absent optional ones take their defaults
//   (ir::make_attrs). Reals accept integers. A tensor is a flat row-major list of its
//   elements; its dtype and shape are the node's stated type, and the element count must equal
//   the shape's. Float elements are rounded to the dtype (f16 and bf16 through float); a
//   finite value that would become infinite or a non-zero one that would become zero is an
//   error, as is an integer outside its dtype's range. Booleans are true and false.
//   NaN reads as the default quiet NaN with the sign written: NaN payloads are not kept.
// - Limits: a shape has at most 64 dimensions and 2^40 elements; a node at most 65536 inputs.
//
// Errors throw orion::Error "FILE:LINE:COL: message" (1-based; columns count bytes) at the
// offending token, saying what was expected and what was found. Attribute errors found by
// make_attrs (unknown or repeated names, wrong kinds, missing required attributes) point at
// the attribute block's '{', or, when the node has no block, at the token after ')'. A wrong
// number of inputs and a type rule's failure point at the op name. When the whole text has
// parsed, ir::verify checks the graph; its message is reported as "FILE: message".
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace orion::ir {

// The graph in `text`, verified. `file` names the text in error messages.
Graph parse_graph(std::string_view text, std::string_view file = "<input>");

// Reads the file at `path` and parses it; throws orion::Error naming the path when it cannot
// be read.
Graph read_graph_file(const std::string& path);

}  // namespace orion::ir
