#pragma once
// How a model's matrices are stored for decoding: f32, f16, per-block int8 (q8) or MLX's affine
// 4-bit (q4: a scale and a bias per group, exec/cpu/quantize_affine.h). A fact of
// the converted format (formats/stored_weights.h) and of the fast engine's packed layers
// (engine/fast/packed_linear.h) alike, so it lives below both and includes nothing of either.
#include <string_view>

namespace orion::model {

enum class WeightDType { f32, f16, q8, q4 };

std::string_view weight_dtype_name(WeightDType t);
WeightDType weight_dtype_from_name(std::string_view name);  // throws orion::Error

// The block of weights that share one q8 scale when none is given (32 or 64 are supported).
inline constexpr int kQ8Block = 32;
// The weights that share one q4 scale and bias when none is given: mlx-lm's default group.
inline constexpr int kQ4Group = 64;

}  // namespace orion::model
