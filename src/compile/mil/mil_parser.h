#pragma once
// The MIL text parser: program text -> MilAst (mil_ast.h). Syntax only; mil_to_ir.h gives it
// meaning. Grammar (white space free everywhere, no comments):
//
//   program   := 'program' '(' NUMBER ')' '[' 'buildInfo' '=' dict ']' '{' function* '}'
//   dict      := 'dict' '<' type ',' type '>' '(' '{' [ pair (',' pair)* ] '}' ')'
//   pair      := '{' STRING ',' STRING '}'
//   function  := 'func' IDENT '<' IDENT '>' '(' [ var (',' var)* ] ')'
//                '{' operation* '}' '->' '(' [ IDENT (',' IDENT)* ] ')' ';'
//   var       := type IDENT
//   operation := outputs '=' IDENT '(' [ arg (',' arg)* ] ')' [ '[' [ attr (',' attr)* ] ']' ] ';'
//   outputs   := var (',' var)* | '(' var (',' var)* ')'      (several: multi-output ops)
//   arg       := IDENT '=' ( IDENT | literal | '(' IDENT (',' IDENT)* ')' )
//   attr      := IDENT '=' literal
//   type      := 'tensor' '<' DTYPE ',' '[' [ INT (',' INT)* ] ']' '>' | DTYPE
//   literal   := type '(' ( element | list | blobfile ) ')'
//   list      := '[' [ (element | list) (',' (element | list))* ] ']'     (flattened)
//   blobfile  := 'BLOBFILE' '(' 'path' '=' literal ',' 'offset' '=' literal ')'   (either order)
//   element   := NUMBER | 'inf' | 'nan' | 'true' | 'false' | STRING
//
//   IDENT [A-Za-z_][A-Za-z0-9_@]*; NUMBER -?(C99 hex float | decimal, fraction and exponent
//   optional) and -inf, -nan; DTYPE bool int8 int16 int32 int64 uint8 uint16 uint32 uint64
//   fp16 fp32 fp64 string, and the sub-byte int4 uint1 uint2 uint3 uint4 uint6.
//
// The program must carry a buildInfo dictionary, as Apple's parser requires. Limits: a type
// has at most 64 dimensions and 2^40 elements; lists nest at most 64 deep.
//
// Errors throw orion::Error "FILE:LINE:COL: message" (1-based, columns count bytes) at the
// offending token, saying what was expected and what was found.
#include <string_view>

#include "compile/mil/mil_ast.h"

namespace orion::compile {

MilAst parse_mil_ast(std::string_view text, std::string_view file = "<mil>");
// One literal alone (e.g. an argument's default, "tensor<int32, [2]>([1, 1])").
MilLiteral parse_mil_literal(std::string_view text, std::string_view file = "<literal>");

}  // namespace orion::compile
