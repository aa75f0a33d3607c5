#pragma once
// The mapping between IR ops and MIL ops: the one table both the MIL writer and the MIL reader
// use. Each IR op has an entry (checked at compile time); ops without a MIL form (gelu, silu,
// layer_norm, rms_norm, gather, neg, param) have an empty MIL name and must be legalised into
// ops that have one before a graph is written as MIL.
//
// Every MIL argument of an op is listed, in alphabetical order (the order compiled files use
// and the writer prints), with how it is encoded from the IR node: a tensor input, or an
// attribute that the writer declares as a named const (the ANE rejects inline literals).
#include <optional>
#include <span>
#include <string_view>

#include "ir/op_table.h"

namespace orion::compile {

enum class MilEnc : std::uint8_t {
  input,          // IR input `input` (a value name)
  inputs_tuple,   // every IR input, as a tuple `(a, b, c)` (concat's values)
  ints,           // IR integer-list attribute `attr` as tensor<int32, [n]>
  int32,          // IR integer attribute `attr` as an int32 scalar
  boolean,        // IR boolean attribute `attr` as a bool scalar
  real,           // IR real attribute `attr` as a scalar of the dtype of IR input 0
  dtype_name,     // IR dtype attribute `attr` as a string: "fp16", "fp32", "int32", "bool", ...
  slice_size,     // slice_by_size's size: IR attributes end - begin, as tensor<int32, [n]>
  conv_pad,       // conv's pad: IR attribute pads [top, bottom, left, right] as tensor<int32, [4]>
  conv_pad_type,  // conv's pad_type: "valid" when every pad is zero, else "custom"
  always_false,   // a bool the IR does not model and that must be false (concat's interleave)
};

struct MilArg {
  std::string_view name;  // MIL argument name
  MilEnc enc;
  int input = 0;               // for MilEnc::input
  std::string_view attr = {};  // the IR attribute, for the attribute encodings
  // The MIL default when the argument is absent, as MIL literal text (the reader parses it);
  // empty: the argument is required.
  std::string_view default_literal = {};
};

struct MilOpInfo {
  ir::Op op;
  std::string_view mil_name;  // empty: no MIL form
  std::span<const MilArg> args;  // alphabetical
};

const MilOpInfo& mil_op_info(ir::Op op);
// dequantize of a value computed at run time (W8A8 activations): MIL's `dequantize`, where the
// table's form, constexpr_blockwise_shift_scale, is for consts only.
const MilOpInfo& mil_runtime_dequantize();
// The IR op a MIL op name maps to (the writer's inverse); nullopt for an unmapped name.
std::optional<ir::Op> ir_op_from_mil(std::string_view mil_name);
// The whole table, in the IR op order.
std::span<const MilOpInfo> all_mil_ops();

}  // namespace orion::compile
