#pragma once
// The op table: the one list of IR ops. Each entry gives the op's text name, how many inputs it
// takes, its attributes and its type rule. Everything else (builder, verifier, parser, printer,
// executors, the MIL lowering and the gradient rules) reads from here.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/type.h"

namespace orion::ir {

struct Node;
class Builder;
struct Value;

// Declaration order is the table's order (checked at compile time in op_table.cpp).
enum class Op : std::uint8_t {
  // Sources: their type is declared, not inferred.
  input,   // a runtime input, bound by name
  param,   // a named weight, bound by name at run time (from a model file or a trainer)
  constant,  // data carried in the graph ("const" in text)
  // Linear algebra.
  matmul,
  conv,  // 2-D convolution, NCHW
  // Elementwise binary, numpy broadcasting.
  add, sub, mul, div, pow,
  // Elementwise unary.
  neg, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, gelu, silu,
  // Normalisation over the last axis, and softmax.
  softmax, layer_norm, rms_norm,
  // Reductions.
  reduce_sum, reduce_mean, reduce_max,
  // Data movement.
  reshape, transpose, slice, concat, gather, scatter_add, broadcast_to,
  // Element type and value range.
  cast, clamp, where,
  // Training: the fused loss and its gradient.
  softmax_cross_entropy, softmax_cross_entropy_grad,
  // Integer weights and activations: affine (de)quantization with blockwise scales.
  dequantize, quantize,
  // MLX's affine form of a quantized matrix, as its folders store it (a frozen 4-bit base).
  dequantize_affine,
  count_  // not an op: the number of ops
};

inline constexpr int kOpCount = static_cast<int>(Op::count_);

// Why a type rule rejected its inputs: a message without the node's name (the caller adds it).
using TypeRule = TensorType (*)(std::span<const TensorType> inputs, const Node& node);

// The gradient rule of an op (src/ir/grad_rules.*): given the node, its inputs and output as
// values of the builder that writes the backward graph, and the gradient of the loss with
// respect to the output, it adds the ops computing the gradient with respect to each input and
// returns one value per input, of that input's shape, or nullopt for an input that takes no
// gradient (indices, conditions, integer values).
using GradRule = std::vector<std::optional<Value>> (*)(Builder& b, const Node& node,
                                                       std::span<const Value> inputs, Value output,
                                                       Value grad);

enum class OpClass : std::uint8_t { source, linear, binary, unary, normalize, reduce, layout, other };

struct OpInfo {
  Op op;
  std::string_view name;  // spelling in IR text
  OpClass cls;
  int min_inputs;
  int max_inputs;  // -1: any number
  std::span<const AttrSpec> attrs;
  TypeRule type_rule;  // null for sources, whose type is declared
  std::string_view doc;  // one line for `orion ops` and docs
  // Exactly one of the two (checked at compile time in op_table.cpp): the gradient rule, or why
  // the op takes no gradient.
  GradRule grad = nullptr;
  std::string_view no_grad = {};
};

const OpInfo& op_info(Op op);
std::optional<Op> op_from_name(std::string_view name);
std::span<const OpInfo> all_ops();

// Index of attribute `name` in the op's declaration, or -1.
int attr_index(Op op, std::string_view name);

}  // namespace orion::ir
