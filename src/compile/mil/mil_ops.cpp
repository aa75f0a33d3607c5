#include "compile/mil/mil_ops.h"

#include <array>

#include "core/error.h"

namespace orion::compile {

namespace {

using ir::Op;
using E = MilEnc;

constexpr MilArg kBinary[] = {{"x", E::input, 0}, {"y", E::input, 1}};
constexpr MilArg kUnary[] = {{"x", E::input, 0}};
constexpr MilArg kMatmul[] = {
    {"transpose_x", E::boolean, 0, "transpose_x", "bool(false)"},
    {"transpose_y", E::boolean, 0, "transpose_y", "bool(false)"},
    {"x", E::input, 0},
    {"y", E::input, 1},
};
constexpr MilArg kConv[] = {
    {"dilations", E::ints, 0, "dilations", "tensor<int32, [2]>([1, 1])"},
    {"groups", E::int32, 0, "groups", "int32(1)"},
    {"pad", E::conv_pad, 0, "pads", "tensor<int32, [4]>([0, 0, 0, 0])"},
    {"pad_type", E::conv_pad_type, 0, "pads", "string(\"valid\")"},
    {"strides", E::ints, 0, "strides", "tensor<int32, [2]>([1, 1])"},
    {"weight", E::input, 1},
    {"x", E::input, 0},
};
constexpr MilArg kSoftmax[] = {{"axis", E::int32, 0, "axis", "int32(-1)"}, {"x", E::input, 0}};
constexpr MilArg kReduce[] = {
    {"axes", E::ints, 0, "axes"},
    {"keep_dims", E::boolean, 0, "keep_dims", "bool(false)"},
    {"x", E::input, 0},
};
constexpr MilArg kReshape[] = {{"shape", E::ints, 0, "shape"}, {"x", E::input, 0}};
constexpr MilArg kTranspose[] = {{"perm", E::ints, 0, "perm"}, {"x", E::input, 0}};
constexpr MilArg kSliceBySize[] = {
    {"begin", E::ints, 0, "begin"},
    {"size", E::slice_size, 0, "end"},
    {"x", E::input, 0},
};
constexpr MilArg kConcat[] = {
    {"axis", E::int32, 0, "axis"},
    {"interleave", E::always_false, 0, {}, "bool(false)"},
    {"values", E::inputs_tuple},
};
constexpr MilArg kCast[] = {{"dtype", E::dtype_name, 0, "dtype"}, {"x", E::input, 0}};
constexpr MilArg kClip[] = {
    {"alpha", E::real, 0, "min"},
    {"beta", E::real, 0, "max"},
    {"x", E::input, 0},
};
// constexpr_blockwise_shift_scale, the form hardware-run int8 programs wrote: named consts for
// data (int8) and scale (fp16), the optional offset (a zero point) likewise.
constexpr MilArg kBlockwiseShiftScale[] = {{"data", E::input, 0}, {"offset", E::input, 2}, {"scale", E::input, 1}};
constexpr MilArg kQuantize[] = {
    {"input", E::input, 0}, {"output_dtype", E::dtype_name, 0, "dtype"}, {"scale", E::input, 1}, {"zero_point", E::input, 2}};
constexpr MilArg kSelect[] = {{"a", E::input, 1}, {"b", E::input, 2}, {"cond", E::input, 0}};

constexpr std::array<MilOpInfo, ir::kOpCount> kMilOps = {{
    {Op::input, {}, {}},     // a function parameter, not an op
    {Op::param, {}, {}},     // runtime weights: the ANE bakes weights in as consts
    {Op::constant, "const", {}},  // name and val are attributes, handled by writer and reader
    {Op::matmul, "matmul", kMatmul},
    {Op::conv, "conv", kConv},
    {Op::add, "add", kBinary},
    {Op::sub, "sub", kBinary},
    {Op::mul, "mul", kBinary},
    {Op::div, "real_div", kBinary},
    {Op::pow, "pow", kBinary},
    {Op::neg, {}, {}},
    {Op::exp, "exp", kUnary},
    {Op::log, "log", kUnary},
    {Op::sqrt, "sqrt", kUnary},
    {Op::rsqrt, "rsqrt", kUnary},  // MIL's epsilon (1e-12 by default) is left out, as working programs do
    {Op::tanh, "tanh", kUnary},
    {Op::sigmoid, "sigmoid", kUnary},
    {Op::relu, "relu", kUnary},
    {Op::gelu, {}, {}},  // the ANE rejects gelu: written out with tanh
    {Op::silu, {}, {}},  // written out as mul(x, sigmoid(x))
    {Op::softmax, "softmax", kSoftmax},
    {Op::layer_norm, {}, {}},  // written out with reductions
    {Op::rms_norm, {}, {}},
    {Op::reduce_sum, "reduce_sum", kReduce},
    {Op::reduce_mean, "reduce_mean", kReduce},
    {Op::reduce_max, "reduce_max", kReduce},
    {Op::reshape, "reshape", kReshape},
    {Op::transpose, "transpose", kTranspose},
    {Op::slice, "slice_by_size", kSliceBySize},
    {Op::concat, "concat", kConcat},
    {Op::gather, {}, {}},  // embedding lookups run on the host
    {Op::scatter_add, {}, {}},  // the embedding gradient, on the host like gather
    {Op::broadcast_to, {}, {}},  // MIL's tile could write it; no ANE kernel needs it yet
    {Op::cast, "cast", kCast},
    {Op::clamp, "clip", kClip},
    {Op::where, "select", kSelect},
    {Op::softmax_cross_entropy, {}, {}},  // the loss over the vocabulary runs on the host
    {Op::softmax_cross_entropy_grad, {}, {}},
    {Op::dequantize, "constexpr_blockwise_shift_scale", kBlockwiseShiftScale},  // of consts: mil_to_ir reads the other forms
    {Op::quantize, "quantize", kQuantize},  // W8A8 activations
    {Op::dequantize_affine, {}, {}},  // a 4-bit base for the CPU; a device gets it widened (train/model_loss.h)
}};

// Completeness: one entry per IR op, in the op enum's order, arguments alphabetical (so the
// writer prints them in the order compiled files use). That each argument names an input or
// attribute the IR op has is checked by a test (the IR op table is not constexpr-reachable).
constexpr bool table_in_order_and_sorted() {
  for (int i = 0; i < ir::kOpCount; ++i) {
    const MilOpInfo& m = kMilOps[static_cast<std::size_t>(i)];
    if (static_cast<int>(m.op) != i) return false;
    for (std::size_t a = 1; a < m.args.size(); ++a)
      if (!(m.args[a - 1].name < m.args[a].name)) return false;
  }
  return true;
}
static_assert(table_in_order_and_sorted(), "kMilOps must follow enum ir::Op, arguments alphabetical");

}  // namespace

const MilOpInfo& mil_runtime_dequantize() {
  static constexpr MilArg kArgs[] = {{"input", E::input, 0}, {"scale", E::input, 1}, {"zero_point", E::input, 2}};
  static constexpr MilOpInfo kInfo{Op::dequantize, "dequantize", kArgs};
  return kInfo;
}

const MilOpInfo& mil_op_info(ir::Op op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= kMilOps.size()) throw Error("op id " + std::to_string(i) + " is not in the MIL op table");
  return kMilOps[i];
}

std::optional<ir::Op> ir_op_from_mil(std::string_view mil_name) {
  if (mil_name.empty()) return std::nullopt;
  for (const MilOpInfo& m : kMilOps)
    if (m.mil_name == mil_name) return m.op;
  return std::nullopt;
}

std::span<const MilOpInfo> all_mil_ops() { return kMilOps; }

}  // namespace orion::compile
