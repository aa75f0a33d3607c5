#pragma once
// A graph over an MLX quantized folder's matrices as the folder holds them: each quantized
// param becomes dequantize_affine of its words, scales and biases as constants, so a frozen
// 4-bit base (QLoRA) is never widened whole. A lookup (gather) widens only the rows it takes; a
// product with a matrix larger than a chunk (a vocabulary head) is split along its rows, so no
// value holds more than a chunk of it in f32. With ir::rematerialize after autodiff, the
// backward pass widens each again where it reads it.
#include <cstddef>

#include "ir/graph.h"
#include "model/formats/mlx_quantization.h"

namespace orion::model {

// The f32 bytes of one widened chunk, at most (a chunk is at least one row).
inline constexpr std::size_t kWidenedChunkBytes = std::size_t{32} << 20;

// `graph` with its params named in `quantized` bound as above (the others left as they are),
// products split into chunks of at most `chunk_bytes` widened. Throws orion::Error naming the
// param when its declared shape is not the matrix's.
ir::Graph bind_quantized(const ir::Graph& graph, const QuantizedMatrices& quantized,
                         std::size_t chunk_bytes = kWidenedChunkBytes);

}  // namespace orion::model
