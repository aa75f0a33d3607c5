#pragma once
// An MLX folder's 4-bit matrices in the ANE's uint4 blockwise form (constexpr_blockwise_shift_scale):
// the values unpacked one per byte, the scales in fp16 and a float offset -bias / scale per group
// (w = scale * (q - offset) = scale * q + bias), so that `orion compile --weights int4|uint4` puts
// the folder's own values into the kernels instead of quantizing its widened floats again.
#include "compile/passes/int4_weights.h"
#include "model/formats/mlx_quantization.h"

namespace orion::model {

// The 4-bit matrices of `quantized`, by param name (matrices in other bits are left out).
compile::Int4Weights mlx_int4_weights(const QuantizedMatrices& quantized);

}  // namespace orion::model
