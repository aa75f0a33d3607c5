#pragma once
// The MIL writer: an IR graph in "ANE form" as MIL program text and its weight blob.
//
// ANE form: every node is an input, a const, or an op with a MIL spelling (mil_ops.h); values
// are fp16 (fp32 inputs with a cast inside are allowed). Anything else throws orion::Error
// naming the node: ops without a MIL form must be legalised first.
//
// What the text looks like (docs/ane/FORMATS.md, "MIL program text"):
// - The header of the chosen dialect, then `func main<iosNN>(inputs) { ... } -> (outputs);`.
// - Every scalar or list argument (conv's dilations, groups, pad, pad_type, strides;
//   matmul's transposes; axes; shapes; slice begin and size; cast's dtype; clip's bounds;
//   concat's axis and interleave) is a named const declared on the line before its op and
//   named "<value>_<argument>": the ANE rejects inline literals.
// - Arguments are listed alphabetically; every op carries `[name = string("<value>")]`.
// - IR consts of fp16 with more than max_inline_elements elements go to the weight blob
//   (BLOBFILE, offset of their record); smaller ones are inline tensor literals.
// - The compile-time weight forms (mil_constexpr.h) are their constexpr ops: a dequantize of
//   consts is constexpr_blockwise_shift_scale, its 4-bit data (and integer offset) int4/uint4
//   blobs; a LUT form is constexpr_lut_to_dense, its codes uintN and its LUT in the blob, in the
//   iOS18 form or, in the ios16 dialect, the iOS16 one (one LUT, packed uint8 indices, the
//   arguments in the attribute block). What has no MIL form (a 4-bit value out of range, an
//   index outside its table, a grouped LUT or 4-bit data in ios16) throws, naming the node.
// - Floats are C99 hex floats, exact for fp16 and fp32.
// - Value names are IR names with '.' made '_' (MIL identifiers have no '.'), made unique by
//   a numeric suffix in node order; MIL's keywords and dtype names get a trailing '_'.
// The same graph always gives the same bytes.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compile/mil/mil_syntax.h"
#include "compile/blob/weight_blob_writer.h"
#include "ir/graph.h"

namespace orion::compile {

struct MilWriteOptions {
  MilDialect dialect = MilDialect::ios18;
  std::int64_t max_inline_elements = 16;
  std::string blob_path = "@model_path/weights/weight.bin";
  // One weight file per tensor, weights/<value>.bin, as M1/M2 chips need (ANE039); else every
  // tensor in the one file `blob_path` names.
  bool one_file_per_tensor = false;
};

struct MilProgram {
  std::string text;
  WeightBlobWriter weights;  // to be written at the folder `blob_path` names
  // With one_file_per_tensor: each tensor's file, by its BLOBFILE path (weights stays empty).
  std::vector<std::pair<std::string, WeightBlobWriter>> tensor_files;
};

MilProgram write_mil(const ir::Graph& graph, const MilWriteOptions& options = {});

// Writes `folder`/model.mil and, when the program has blobs, the weight files its BLOBFILE
// paths name (@model_path/ standing for `folder`), creating the folders; each file is written
// atomically.
void write_model_folder(const MilProgram& program, const std::string& folder,
                        const MilWriteOptions& options = {});

// The MIL name a value of IR name `ir_name` gets before uniqueness suffixes.
std::string mil_identifier(std::string_view ir_name);

}  // namespace orion::compile
