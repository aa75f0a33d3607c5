#include "ir/op_table.h"

#include <array>

#include "core/error.h"
#include "ir/grad_rules.h"
#include "ir/type_rules.h"

namespace orion::ir {

namespace {

using K = AttrKind;

constexpr AttrSpec kConstAttrs[] = {{"value", K::tensor, true}};
constexpr AttrSpec kMatmulAttrs[] = {{"transpose_x", K::boolean}, {"transpose_y", K::boolean}};
// pads are [top, bottom, left, right], the order of MIL conv's `pad`.
constexpr AttrSpec kConvAttrs[] = {{"strides", K::ints, true}, {"pads", K::ints, true},
                                   {"dilations", K::ints, true}, {"groups", K::integer, false, 1}};
constexpr AttrSpec kSoftmaxAttrs[] = {{"axis", K::integer, false, -1}};
constexpr AttrSpec kLayerNormAttrs[] = {{"epsilon", K::real, false, 1e-5}};
constexpr AttrSpec kRmsNormAttrs[] = {{"epsilon", K::real, false, 1e-6}};
constexpr AttrSpec kReduceAttrs[] = {{"axes", K::ints, true}, {"keep_dims", K::boolean}};
constexpr AttrSpec kReshapeAttrs[] = {{"shape", K::ints, true}};
constexpr AttrSpec kTransposeAttrs[] = {{"perm", K::ints, true}};
constexpr AttrSpec kSliceAttrs[] = {{"begin", K::ints, true}, {"end", K::ints, true}};
constexpr AttrSpec kConcatAttrs[] = {{"axis", K::integer, true}};
constexpr AttrSpec kGatherAttrs[] = {{"axis", K::integer}};
constexpr AttrSpec kScatterAddAttrs[] = {{"axis", K::integer}, {"size", K::integer, true}};
constexpr AttrSpec kBroadcastAttrs[] = {{"shape", K::ints, true}};
constexpr AttrSpec kCastAttrs[] = {{"dtype", K::dtype, true}};
constexpr AttrSpec kClampAttrs[] = {{"min", K::real, true}, {"max", K::real, true}};
constexpr AttrSpec kQuantizeAttrs[] = {{"dtype", K::dtype, true}};
// The data's storage width: 8, or 4 (int4/uint4 values held one per i8/u8 element, stored packed
// where the graph is written out: MIL's sub-byte types).
constexpr AttrSpec kDequantizeAttrs[] = {{"bits", K::integer, false, 8}};
// The packed width of each value: 2, 3, 4, 5, 6 or 8, as MLX's quantize takes.
constexpr AttrSpec kDequantizeAffineAttrs[] = {{"bits", K::integer, true}};

using C = OpClass;

constexpr std::array<OpInfo, kOpCount> kOps = {{
    {Op::input, "input", C::source, 0, 0, {}, nullptr, "runtime input, bound by name", nullptr,
     "a source: the gradient stops at it (autodiff reads it off)"},
    {Op::param, "param", C::source, 0, 0, {}, nullptr, "named weight, bound by name", nullptr,
     "a source: the gradient stops at it (autodiff reads it off)"},
    {Op::constant, "const", C::source, 0, 0, kConstAttrs, nullptr, "data carried in the graph", nullptr,
     "a source: constants take no gradient"},
    {Op::matmul, "matmul", C::linear, 2, 2, kMatmulAttrs, rules::matmul,
     "batched matrix product x @ y, batch dims broadcast, optional transposes of the last two axes", grad::matmul},
    {Op::conv, "conv", C::linear, 2, 2, kConvAttrs, rules::conv,
     "2-D convolution without bias: x [N, Cin, H, W], weight [Cout, Cin/groups, kh, kw] -> "
     "[N, Cout, Ho, Wo]; strides [sh, sw], pads [top, bottom, left, right], dilations [dh, dw]", nullptr,
     "no rule yet: its gradients need a transposed convolution, and no trained model uses conv (linear layers are matmuls)"},
    {Op::add, "add", C::binary, 2, 2, {}, rules::binary, "x + y (broadcast)", grad::binary},
    {Op::sub, "sub", C::binary, 2, 2, {}, rules::binary, "x - y (broadcast)", grad::binary},
    {Op::mul, "mul", C::binary, 2, 2, {}, rules::binary, "x * y (broadcast)", grad::binary},
    {Op::div, "div", C::binary, 2, 2, {}, rules::binary, "x / y (broadcast)", grad::binary},
    {Op::pow, "pow", C::binary, 2, 2, {}, rules::binary, "x ^ y (broadcast)", grad::binary},
    {Op::neg, "neg", C::unary, 1, 1, {}, rules::unary, "-x", grad::unary},
    {Op::exp, "exp", C::unary, 1, 1, {}, rules::unary, "e^x", grad::unary},
    {Op::log, "log", C::unary, 1, 1, {}, rules::unary, "natural logarithm", grad::unary},
    {Op::sqrt, "sqrt", C::unary, 1, 1, {}, rules::unary, "square root", grad::unary},
    {Op::rsqrt, "rsqrt", C::unary, 1, 1, {}, rules::unary, "1 / sqrt(x)", grad::unary},
    {Op::tanh, "tanh", C::unary, 1, 1, {}, rules::unary, "hyperbolic tangent", grad::unary},
    {Op::sigmoid, "sigmoid", C::unary, 1, 1, {}, rules::unary, "1 / (1 + e^-x)", grad::unary},
    {Op::relu, "relu", C::unary, 1, 1, {}, rules::unary, "max(x, 0)", grad::unary},
    {Op::gelu, "gelu", C::unary, 1, 1, {}, rules::unary,
     "tanh approximation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))", grad::unary},
    {Op::silu, "silu", C::unary, 1, 1, {}, rules::unary, "x * sigmoid(x)", grad::unary},
    {Op::softmax, "softmax", C::normalize, 1, 1, kSoftmaxAttrs, rules::softmax,
     "softmax along one axis", grad::softmax},
    {Op::layer_norm, "layer_norm", C::normalize, 3, 3, kLayerNormAttrs, rules::layer_norm,
     "(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis; inputs x, gamma, beta", grad::layer_norm},
    {Op::rms_norm, "rms_norm", C::normalize, 2, 2, kRmsNormAttrs, rules::rms_norm,
     "x / sqrt(mean(x^2) + epsilon) * weight over the last axis; inputs x, weight", grad::rms_norm},
    {Op::reduce_sum, "reduce_sum", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "sum over axes", grad::reduce},
    {Op::reduce_mean, "reduce_mean", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "mean over axes", grad::reduce},
    {Op::reduce_max, "reduce_max", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "maximum over axes", grad::reduce},
    {Op::reshape, "reshape", C::layout, 1, 1, kReshapeAttrs, rules::reshape,
     "same elements, new shape (one -1 is inferred)", grad::reshape},
    {Op::transpose, "transpose", C::layout, 1, 1, kTransposeAttrs, rules::transpose,
     "permute axes: output axis i is input axis perm[i]", grad::transpose},
    {Op::slice, "slice", C::layout, 1, 1, kSliceAttrs, rules::slice,
     "the box [begin, end) of x, one range per axis", grad::slice},
    {Op::concat, "concat", C::layout, 1, -1, kConcatAttrs, rules::concat,
     "join inputs along an axis", grad::concat},
    {Op::gather, "gather", C::layout, 2, 2, kGatherAttrs, rules::gather,
     "rows of the table (input 0) picked by i32 indices (input 1) along an axis", grad::gather},
    {Op::scatter_add, "scatter_add", C::layout, 2, 2, kScatterAddAttrs, rules::scatter_add,
     "gather's adjoint: zeros with `size` rows along the axis, each slice of the updates (input 0) "
     "added at its i32 index (input 1); repeated indices add up",
     grad::scatter_add},
    {Op::broadcast_to, "broadcast_to", C::layout, 1, 1, kBroadcastAttrs, rules::broadcast_to,
     "x repeated to a shape it broadcasts to (numpy rules)", grad::broadcast_to},
    {Op::cast, "cast", C::other, 1, 1, kCastAttrs, rules::cast, "convert to another dtype", grad::cast},
    {Op::clamp, "clamp", C::other, 1, 1, kClampAttrs, rules::clamp, "min(max(x, min), max)", grad::clamp},
    {Op::where, "where", C::other, 3, 3, {}, rules::where,
     "cond ? a : b elementwise (broadcast); inputs cond (bool), a, b", grad::where},
    {Op::softmax_cross_entropy, "softmax_cross_entropy", C::other, 2, 2, {}, rules::softmax_cross_entropy,
     "per-row loss logsumexp(logits) - logits[target]: logits [..., V], i32 targets [...] in [0, V) -> [...]",
     grad::softmax_cross_entropy},
    {Op::softmax_cross_entropy_grad, "softmax_cross_entropy_grad", C::other, 3, 3, {},
     rules::softmax_cross_entropy_grad,
     "(softmax(logits) - one_hot(targets)) * dloss per row: inputs logits [..., V], targets [...], dloss [...]",
     nullptr, "a gradient op: second derivatives are not needed"},
    {Op::dequantize, "dequantize", C::other, 2, 3, kDequantizeAttrs, rules::dequantize,
     "(data - zero_point) * scale: data i8/u8, scale float and zero_point (default 0) either scalars or of data's "
     "rank with each dim dividing data's (one value per block); the output has scale's dtype; bits 4: the data "
     "(and an integer zero point) hold int4 [-8, 7] (i8) or uint4 [0, 15] (u8) values",
     nullptr, "integer data takes no gradient"},
    {Op::quantize, "quantize", C::other, 2, 3, kQuantizeAttrs, rules::quantize,
     "round_half_even(x / scale + zero_point) clamped to dtype (i8/u8); scale and zero_point as dequantize's",
     nullptr, "its output is integer: no gradient"},
    {Op::dequantize_affine, "dequantize_affine", C::other, 3, 3, kDequantizeAffineAttrs, rules::dequantize_affine,
     "scale * q + bias per group (MLX's affine quantization): data u8 [..., cols * bits / 8], the little-endian "
     "bytes of MLX's uint32 words (values packed from the lowest bit up); scale and bias float [..., cols / group], "
     "group 32, 64 or 128; the output [..., cols] has scale's dtype",
     nullptr, "a frozen quantized weight: its words are integers and its scales and biases are not trained"},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kOpCount; ++i)
    if (static_cast<int>(kOps[static_cast<std::size_t>(i)].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOps must list the ops in the order of enum Op");

// Every op has a gradient rule or says why it takes none: a new op cannot be forgotten.
constexpr bool every_op_has_a_gradient_rule_or_a_reason() {
  for (const OpInfo& info : kOps)
    if ((info.grad != nullptr) == !info.no_grad.empty()) return false;
  return true;
}
static_assert(every_op_has_a_gradient_rule_or_a_reason(),
              "every op needs a gradient rule or a reason in no_grad, not both");

}  // namespace

const OpInfo& op_info(Op op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= kOps.size()) throw Error("op id " + std::to_string(i) + " is not in the op table");
  return kOps[i];
}

std::optional<Op> op_from_name(std::string_view name) {
  for (const OpInfo& info : kOps)
    if (info.name == name) return info.op;
  return std::nullopt;
}

std::span<const OpInfo> all_ops() { return kOps; }

int attr_index(Op op, std::string_view name) {
  const auto attrs = op_info(op).attrs;
  for (std::size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == name) return static_cast<int>(i);
  return -1;
}

AttrValue attr_default(const AttrSpec& spec) {
  switch (spec.kind) {
    case AttrKind::integer: return static_cast<std::int64_t>(spec.default_number);
    case AttrKind::real: return spec.default_number;
    case AttrKind::boolean: return spec.default_number != 0;
    case AttrKind::string: return std::string(spec.default_text);
    case AttrKind::ints: return std::vector<std::int64_t>{};
    case AttrKind::dtype: return dtype_from_name(spec.default_text).value_or(DType::f32);
    case AttrKind::tensor: return Tensor{};
  }
  return std::int64_t{0};
}

}  // namespace orion::ir
