#pragma once
// Palettized 4-bit weights for constexpr_lut_to_dense: a weight [O, C] as 4-bit codes into a
// table of 16 fp16 values, one table per group of `group` output channels, the iOS18
// per-grouped-channel form Anemll's ANE models use (docs/ane/FORMATS.md, "Weights in 4 bits").
//
// The tables are fitted by k-means (Lloyd's iterations in one dimension, exact on the group's
// values as fp16, sorted once: every iteration moves the 16 centroids to the means of the values
// nearest them), started from the uniform 16-level table over the group's [min, max] and stopped
// when no centroid moves or after `iterations`; each weight then takes the code of its nearest
// entry. Deterministic: the same weight gives the same table.
#include <cstdint>
#include <string_view>

#include "core/tensor.h"
#include "ir/transforms/rewriter.h"

namespace orion::compile {

inline constexpr std::int64_t kLut4Entries = 16;
inline constexpr int kLut4Iterations = 64;

struct Lut4Weight {
  Tensor lut;    // f16 [O / group, 16], each table ascending
  Tensor codes;  // u8 [O, C] in [0, 16)
  std::int64_t group() const { return codes.shape()[0] / lut.shape()[0]; }
};

// `w` [O, C], finite floats; group 0 is one table for the whole weight. Throws orion::Error
// naming `name` when the group does not divide O, or for non-finite weights.
Lut4Weight palettize_lut4(const Tensor& w, std::int64_t group, std::string_view name, int iterations = kLut4Iterations);

// The weight of `shape` ([O, C, 1, 1] for a 1x1 conv) as the IR's LUT form (mil_constexpr.h):
// gather `name` of `name`_lut_flat, the reshape of `name`_lut [O / group, 1, ..., 16, 1], by
// `name`_indices; in the iOS16 form (one table, `ios16`), `name`_lut is [16].
ir::ValueId add_lut4_weight(ir::GraphRewriter& rw, const Lut4Weight& w, const Shape& shape, bool ios16, std::string_view name);

}  // namespace orion::compile
