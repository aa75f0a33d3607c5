#pragma once
// The IR forms of MIL's compile-time weight ops (constexpr_*), the one description the MIL
// writer and reader, the validator and ane-sim share (docs/ane/FORMATS.md, "4-bit weights"):
//
// - constexpr_blockwise_shift_scale, constexpr_affine_dequantize: dequantize(const data, const
//   scale[, const zero point]); `bits` 4 when the data are int4 (i8 values in [-8, 7]) or uint4
//   (u8 values in [0, 15]), stored packed in MIL's sub-byte types.
// - constexpr_lut_to_dense (palettized weights): a gather from the LUT, its entries laid out flat,
//
//     lut     = const fp16 [T0, ..., Tr-1, K, 1]   one table of K = 2^bits entries per block of
//                                                  indices (iOS18 form); or [K], one table
//                                                  (iOS16 form)
//     flat    = reshape(lut, [numel(lut)])
//     indices = const i32 [D0, ..., Dr-1]          table(i) * K + code(i), each Td dividing Dd
//     w       = gather(flat, indices, axis 0)      [D0, ..., Dr-1]
//
//   The IR op table has no LUT op, and this composition of its ops computes exactly what the
//   MIL op does, on the CPU executor and in constant folding alike; the LUT keeps its MIL shape,
//   so the writer recovers the tables and the code width from the graph alone.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace orion::compile {

// The palette sizes constexpr_lut_to_dense takes: 2^bits for bits 1, 2, 3, 4, 6, 8 (iOS18);
// iOS16 has no 3-bit form.
bool is_lut_palette_size(std::int64_t entries, bool ios16);

// A LUT form found at a gather node (its structure; the indices' values are lut_codes').
struct LutForm {
  ir::ValueId gather = -1, flat = -1, lut = -1, indices = -1;
  Shape tables;              // T0..Tr-1 (iOS18 form); empty for the iOS16 form
  std::int64_t entries = 0;  // K
  int bits = 0;              // log2(K)
  bool ios16 = false;        // a rank-1 LUT: one table for the whole weight
};

// The LUT form at `id`, or nullopt when `id` is not one (any other gather, or a node that is not
// a gather at all).
std::optional<LutForm> lut_form(const ir::Graph& g, ir::ValueId id);

// The code of each element, row-major: indices[i] - table(i) * K. Throws orion::Error naming
// the gather node for an index outside its own table's entries.
std::vector<std::int32_t> lut_codes(const ir::Graph& g, const LutForm& form);

// The table each element of a [D0..Dr-1] weight reads (row-major over `tables`, which divide
// the dims; an empty `tables` is the one table of the iOS16 form).
std::vector<std::int64_t> lut_table_of_elements(const Shape& dims, const Shape& tables);

// The flat indices of a LUT form: table(i) * K + codes[i] as i32 of `dims`. Throws orion::Error
// for a code outside [0, K) or a table count that does not divide its dim.
Tensor lut_flat_indices(const Shape& dims, const Shape& tables, std::int64_t entries, std::span<const std::int32_t> codes);

// A dequantize of consts (constexpr_blockwise_shift_scale's IR form).
bool is_constant_dequantize(const ir::Graph& g, ir::ValueId id);

// A compile-time weight: a const, a dequantize of consts, or a LUT form.
bool is_constexpr_weight(const ir::Graph& g, ir::ValueId id);

}  // namespace orion::compile
