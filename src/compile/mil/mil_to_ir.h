#pragma once
// MIL -> IR: gives a parsed MIL program (mil_ast.h) its meaning as an IR graph, the inverse
// of the MIL writer, through the same op table (mil_ops.h).
//
// - The program has one function, main; its inputs become IR inputs, its outputs the graph's.
// - Values keep their MIL variable names ('@' becomes '_'); the `name` attribute is ignored,
//   as the ANE binds inputs and outputs by variable name.
// - Arguments may come in any order; absent optional ones take MIL's defaults. A const used
//   only for attribute arguments (named consts) is folded into the IR attributes; any other
//   const becomes an IR const node. Inline literal arguments are accepted for attributes too.
// - BLOBFILE paths must start with "@model_path/", which stands for `model_folder`; any file
//   under it may be named (no absolute paths, no ".."). Blobs are read by WeightBlobReader;
//   the oddities it tolerates (as the hardware did) are printed to stderr as warnings.
// - Every op states its output type; it must equal the type the IR infers.
// - The compile-time weight ops become their IR forms (mil_constexpr.h): int8 and 4-bit
//   dequantization (int4/uint4 data held one value per i8/u8 element, bits 4), LUTs of either
//   opset's constexpr_lut_to_dense. Sub-byte consts are read only by these ops.
// - Multi-output ops (split) and ops without an IR form are errors.
// The graph is verified (ir::verify). Errors throw orion::Error "FILE:LINE:COL: message";
// verifier problems "FILE: message".
#include <string>
#include <string_view>

#include "compile/mil/mil_ast.h"
#include "ir/graph.h"

namespace orion::compile {

ir::Graph mil_to_ir(const MilAst& ast, std::string_view file, const std::string& model_folder = {});

// parse_mil_ast + mil_to_ir.
ir::Graph parse_mil(std::string_view text, std::string_view file = "<mil>", const std::string& model_folder = {});

}  // namespace orion::compile
