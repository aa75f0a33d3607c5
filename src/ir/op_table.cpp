#include "ir/op_table.h"

#include <array>

#include "core/error.h"
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
constexpr AttrSpec kCastAttrs[] = {{"dtype", K::dtype, true}};
constexpr AttrSpec kClampAttrs[] = {{"min", K::real, true}, {"max", K::real, true}};

using C = OpClass;

constexpr std::array<OpInfo, kOpCount> kOps = {{
    {Op::input, "input", C::source, 0, 0, {}, nullptr, "runtime input, bound by name"},
    {Op::param, "param", C::source, 0, 0, {}, nullptr, "named weight, bound by name"},
    {Op::constant, "const", C::source, 0, 0, kConstAttrs, nullptr, "data carried in the graph"},
    {Op::matmul, "matmul", C::linear, 2, 2, kMatmulAttrs, rules::matmul,
     "batched matrix product x @ y, batch dims broadcast, optional transposes of the last two axes"},
    {Op::conv, "conv", C::linear, 2, 2, kConvAttrs, rules::conv,
     "2-D convolution without bias: x [N, Cin, H, W], weight [Cout, Cin/groups, kh, kw] -> "
     "[N, Cout, Ho, Wo]; strides [sh, sw], pads [top, bottom, left, right], dilations [dh, dw]"},
    {Op::add, "add", C::binary, 2, 2, {}, rules::binary, "x + y (broadcast)"},
    {Op::sub, "sub", C::binary, 2, 2, {}, rules::binary, "x - y (broadcast)"},
    {Op::mul, "mul", C::binary, 2, 2, {}, rules::binary, "x * y (broadcast)"},
    {Op::div, "div", C::binary, 2, 2, {}, rules::binary, "x / y (broadcast)"},
    {Op::pow, "pow", C::binary, 2, 2, {}, rules::binary, "x ^ y (broadcast)"},
    {Op::neg, "neg", C::unary, 1, 1, {}, rules::unary, "-x"},
    {Op::exp, "exp", C::unary, 1, 1, {}, rules::unary, "e^x"},
    {Op::log, "log", C::unary, 1, 1, {}, rules::unary, "natural logarithm"},
    {Op::sqrt, "sqrt", C::unary, 1, 1, {}, rules::unary, "square root"},
    {Op::rsqrt, "rsqrt", C::unary, 1, 1, {}, rules::unary, "1 / sqrt(x)"},
    {Op::tanh, "tanh", C::unary, 1, 1, {}, rules::unary, "hyperbolic tangent"},
    {Op::sigmoid, "sigmoid", C::unary, 1, 1, {}, rules::unary, "1 / (1 + e^-x)"},
    {Op::relu, "relu", C::unary, 1, 1, {}, rules::unary, "max(x, 0)"},
    {Op::gelu, "gelu", C::unary, 1, 1, {}, rules::unary,
     "tanh approximation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))"},
    {Op::silu, "silu", C::unary, 1, 1, {}, rules::unary, "x * sigmoid(x)"},
    {Op::softmax, "softmax", C::normalize, 1, 1, kSoftmaxAttrs, rules::softmax,
     "softmax along one axis"},
    {Op::layer_norm, "layer_norm", C::normalize, 3, 3, kLayerNormAttrs, rules::layer_norm,
     "(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis; inputs x, gamma, beta"},
    {Op::rms_norm, "rms_norm", C::normalize, 2, 2, kRmsNormAttrs, rules::rms_norm,
     "x / sqrt(mean(x^2) + epsilon) * weight over the last axis; inputs x, weight"},
    {Op::reduce_sum, "reduce_sum", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "sum over axes"},
    {Op::reduce_mean, "reduce_mean", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "mean over axes"},
    {Op::reduce_max, "reduce_max", C::reduce, 1, 1, kReduceAttrs, rules::reduce, "maximum over axes"},
    {Op::reshape, "reshape", C::layout, 1, 1, kReshapeAttrs, rules::reshape,
     "same elements, new shape (one -1 is inferred)"},
    {Op::transpose, "transpose", C::layout, 1, 1, kTransposeAttrs, rules::transpose,
     "permute axes: output axis i is input axis perm[i]"},
    {Op::slice, "slice", C::layout, 1, 1, kSliceAttrs, rules::slice,
     "the box [begin, end) of x, one range per axis"},
    {Op::concat, "concat", C::layout, 1, -1, kConcatAttrs, rules::concat,
     "join inputs along an axis"},
    {Op::gather, "gather", C::layout, 2, 2, kGatherAttrs, rules::gather,
     "rows of the table (input 0) picked by i32 indices (input 1) along an axis"},
    {Op::cast, "cast", C::other, 1, 1, kCastAttrs, rules::cast, "convert to another dtype"},
    {Op::clamp, "clamp", C::other, 1, 1, kClampAttrs, rules::clamp, "min(max(x, min), max)"},
    {Op::where, "where", C::other, 3, 3, {}, rules::where,
     "cond ? a : b elementwise (broadcast); inputs cond (bool), a, b"},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kOpCount; ++i)
    if (static_cast<int>(kOps[static_cast<std::size_t>(i)].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOps must list the ops in the order of enum Op");

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
