#pragma once
// 4-bit weights for constexpr_blockwise_shift_scale (iOS18): a weight [O, C] as int4 or uint4
// values with one fp16 scale per block of `block` consecutive input channels of an output
// channel, and for uint4 one offset per block: w = scale * (q - offset) (docs/ane/FORMATS.md,
// "Weights in 4 bits").
//
// Two ways in: quantize_int4 from float weights, and int4_weight for values quantized elsewhere
// (an MLX 4-bit folder's affine uint4 values, per-group scales and offsets), checked and kept as
// they are; add_int4_weight puts either into a graph as the IR's 4-bit dequantize.
#include <cstdint>
#include <map>
#include <string>
#include <optional>
#include <string_view>

#include "core/tensor.h"
#include "ir/transforms/rewriter.h"

namespace orion::compile {

struct Int4Weight {
  Tensor values;  // [O, C]: i8 in [-8, 7] (int4) or u8 in [0, 15] (uint4)
  Tensor scale;   // f16 [O, C / block]
  // [O, C / block]: u8 in [0, 15] (uint4, an integer zero point) or f16 (a float offset, as an
  // already-quantized folder's bias / scale gives it); none for symmetric int4.
  std::optional<Tensor> offset;

  std::int64_t block() const { return values.shape()[1] / scale.shape()[1]; }
};

// 4-bit weights a model arrived in (an MLX 4-bit folder's), by the model's param name: the int4
// and uint4 forms take them as they are instead of quantizing the widened floats again.
using Int4Weights = std::map<std::string, Int4Weight, std::less<>>;

// Symmetric: int4 values round(w / s) clamped to [-8, 7], s = absmax / 7 per block. Affine:
// uint4 values round(w / s) + z clamped to [0, 15], s = (max - min) / 15 and z = round(-min / s)
// per block, the range widened to hold 0 (so a block of zeros or of one value is exact). A block
// of integers the form holds (|v| <= 7, or a range of at most 15) takes scale 1 and is exact.
// Values are rounded against the fp16 scale they are stored with.
enum class Int4Mode : std::uint8_t { symmetric, affine };

// `w` [O, C], finite floats; block 0 is one block per output channel (the whole row). Throws
// orion::Error naming `name` when the block does not divide C, or for non-finite weights.
Int4Weight quantize_int4(const Tensor& w, std::int64_t block, Int4Mode mode, std::string_view name);

// Values quantized elsewhere: checked (ranks, block shape, value ranges, fp16 scales), not
// changed. Throws orion::Error naming `name` and the problem.
Int4Weight int4_weight(Tensor values, Tensor scale, std::optional<Tensor> offset, std::string_view name);

// The weight reshaped to `shape` ([O, C, 1, 1] for a 1x1 conv) as dequantize(values, scale[,
// offset]) with bits 4, named `name` (its consts `name`_data, _scale, _offset).
ir::ValueId add_int4_weight(ir::GraphRewriter& rw, const Int4Weight& w, const Shape& shape, std::string_view name);

}  // namespace orion::compile
