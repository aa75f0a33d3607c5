// The IR <-> MIL op table: every argument refers to an input or attribute the IR op has, MIL
// names map back to their IR ops, and the ops without a MIL form are exactly the ones a
// legalisation pass must rewrite.
#include <gtest/gtest.h>

#include <set>

#include "compile/mil/mil_ops.h"
#include "compile/mil/mil_parser.h"

namespace orion::compile {
namespace {

using ir::Op;

TEST(MilOps, ArgumentsReferToTheIrOp) {
  for (const MilOpInfo& m : all_mil_ops()) {
    const ir::OpInfo& info = ir::op_info(m.op);
    SCOPED_TRACE(std::string(info.name));
    std::set<int> inputs;
    for (const MilArg& a : m.args) {
      switch (a.enc) {
        case MilEnc::input:
          EXPECT_GE(a.input, 0);
          EXPECT_LT(a.input, info.max_inputs < 0 ? info.min_inputs : info.max_inputs);
          EXPECT_TRUE(inputs.insert(a.input).second) << "input " << a.input << " used twice";
          break;
        case MilEnc::inputs_tuple: EXPECT_EQ(info.max_inputs, -1); break;
        case MilEnc::always_false: break;
        default: EXPECT_GE(ir::attr_index(m.op, a.attr), 0) << "no attribute " << a.attr;
      }
      if (!a.default_literal.empty()) {
        EXPECT_NO_THROW(parse_mil_literal(a.default_literal)) << a.default_literal;
      }
    }
    // Fixed-arity ops use every input.
    if (!m.mil_name.empty() && info.max_inputs >= 0 && m.op != Op::constant) {
      EXPECT_EQ(static_cast<int>(inputs.size()), info.max_inputs);
    }
    if (!m.mil_name.empty()) {
      EXPECT_EQ(ir_op_from_mil(m.mil_name), m.op);
    }
  }
}

TEST(MilOps, UnmappedOpsAreTheOnesToLegalise) {
  std::set<Op> unmapped;
  for (const MilOpInfo& m : all_mil_ops())
    if (m.mil_name.empty()) unmapped.insert(m.op);
  // Legalised into MIL ops before lowering, or run on the host (gather; the training ops, which
  // only gradient graphs hold; a 4-bit base's MLX form, which a device gets widened).
  EXPECT_EQ(unmapped, (std::set<Op>{Op::input, Op::param, Op::neg, Op::gelu, Op::silu, Op::layer_norm,
                                    Op::rms_norm, Op::gather, Op::softmax_cross_entropy,
                                    Op::softmax_cross_entropy_grad, Op::scatter_add, Op::broadcast_to,
                                    Op::dequantize_affine}));
  EXPECT_EQ(ir_op_from_mil("real_div"), Op::div);
  EXPECT_EQ(ir_op_from_mil("slice_by_size"), Op::slice);
  EXPECT_EQ(ir_op_from_mil("clip"), Op::clamp);
  EXPECT_EQ(ir_op_from_mil("select"), Op::where);
  EXPECT_EQ(ir_op_from_mil("gelu"), std::nullopt);
  EXPECT_EQ(ir_op_from_mil(""), std::nullopt);
}

}  // namespace
}  // namespace orion::compile
