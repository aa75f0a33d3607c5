#pragma once
// The type rules the op table points at (one per family of ops), and the shape helpers that
// executors share with them so that both agree on broadcasting and axes.
#include <span>

#include "ir/graph.h"

namespace orion::ir {

// Numpy broadcasting of two shapes; throws orion::Error when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// An axis in [-rank, rank) made non-negative; throws orion::Error otherwise.
int normalize_axis(std::int64_t axis, int rank);

namespace rules {
TensorType binary(std::span<const TensorType> in, const Node& n);
TensorType unary(std::span<const TensorType> in, const Node& n);
TensorType matmul(std::span<const TensorType> in, const Node& n);
TensorType conv(std::span<const TensorType> in, const Node& n);
TensorType softmax(std::span<const TensorType> in, const Node& n);
TensorType layer_norm(std::span<const TensorType> in, const Node& n);
TensorType rms_norm(std::span<const TensorType> in, const Node& n);
TensorType reduce(std::span<const TensorType> in, const Node& n);
TensorType reshape(std::span<const TensorType> in, const Node& n);
TensorType transpose(std::span<const TensorType> in, const Node& n);
TensorType slice(std::span<const TensorType> in, const Node& n);
TensorType concat(std::span<const TensorType> in, const Node& n);
TensorType gather(std::span<const TensorType> in, const Node& n);
TensorType scatter_add(std::span<const TensorType> in, const Node& n);
TensorType broadcast_to(std::span<const TensorType> in, const Node& n);
TensorType softmax_cross_entropy(std::span<const TensorType> in, const Node& n);
TensorType softmax_cross_entropy_grad(std::span<const TensorType> in, const Node& n);
TensorType cast(std::span<const TensorType> in, const Node& n);
TensorType clamp(std::span<const TensorType> in, const Node& n);
TensorType where(std::span<const TensorType> in, const Node& n);
TensorType dequantize(std::span<const TensorType> in, const Node& n);
TensorType quantize(std::span<const TensorType> in, const Node& n);
TensorType dequantize_affine(std::span<const TensorType> in, const Node& n);
}  // namespace rules

// The resolved target shape of a reshape node (its -1 filled in).
Shape reshape_target(const Shape& from, const std::vector<std::int64_t>& to);
// The reduced axes of a reduce node, normalised and sorted.
std::vector<int> reduce_axes(const Node& n, int rank);

}  // namespace orion::ir
