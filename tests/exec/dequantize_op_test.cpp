// The dequantize and quantize ops on the CPU executor: blockwise scales and zero points, half to
// even rounding and saturation, the values written out here by hand.
#include <gtest/gtest.h>

#include "core/error.h"
#include "exec/cpu/executor.h"
#include "exec/op_test_util.h"
#include "ir/builder.h"

namespace orion::exec {
namespace {

[[maybe_unused]] const bool kQuantizeOpsRegistered = test::mark_tested({ir::Op::dequantize, ir::Op::quantize});

Tensor int8_tensor(Shape shape, std::vector<std::int8_t> v) {
  Tensor t(DType::i8, std::move(shape));
  std::copy(v.begin(), v.end(), t.span<std::int8_t>().begin());
  return t;
}

TEST(DequantizeOp, BlockwiseScalesAndZeroPoints) {
  ir::Builder b("dq");
  // data [2, 4]; scale [2, 2]: blocks of 1 row x 2 columns; zero point per row [2, 1].
  const ir::Value data = b.constant(int8_tensor({2, 4}, {1, 2, 3, 4, -1, -2, -3, -128}));
  const ir::Value scale = b.constant(Tensor::from_floats({2, 2}, std::vector<float>{0.5f, 2.0f, 1.0f, 0.25f}));
  const ir::Value zero = b.constant(int8_tensor({2, 1}, {1, -2}));
  b.output(b.op(ir::Op::dequantize, {data, scale, zero}));
  b.output(b.op(ir::Op::dequantize, {data, b.constant(Tensor::scalar(0.5f))}));
  const std::vector<Tensor> out = CpuExecutor(b.finish(), {Numerics::f32, 1}).run({});
  // Row 0: (q - 1) * [0.5, 0.5, 2, 2]; row 1: (q + 2) * [1, 1, 0.25, 0.25].
  EXPECT_EQ(out[0].to_floats(), (std::vector<float>{0, 0.5f, 4, 6, 1, 0, -0.25f, -31.5f}));
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{0.5f, 1, 1.5f, 2, -0.5f, -1, -1.5f, -64}));
}

TEST(QuantizeOp, RoundsHalfToEvenAndSaturates) {
  ir::Builder b("q");
  const ir::Value x = b.constant(Tensor::from_floats({6}, std::vector<float>{2.5f, 3.5f, -2.5f, 1000, -1000, 0.74f}));
  b.output(b.op(ir::Op::quantize, {x, b.constant(Tensor::scalar(1.0f))}, {{"dtype", DType::i8}}));
  b.output(b.op(ir::Op::quantize, {x, b.constant(Tensor::scalar(0.5f)), b.constant(Tensor::scalar(10.0f))},
                {{"dtype", DType::u8}}));
  const std::vector<Tensor> out = CpuExecutor(b.finish(), {Numerics::f32, 1}).run({});
  EXPECT_EQ(out[0].to_floats(), (std::vector<float>{2, 4, -2, 127, -128, 1}));
  // x / 0.5 + 10: 15, 17, 5, 2010 -> 255, -1990 -> 0, 11.48 -> 11.
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{15, 17, 5, 255, 0, 11}));
}

TEST(DequantizeOp, TypeRulesRefuseWhatIsNotBlockwise) {
  ir::Builder b("bad");
  const ir::Value data = b.constant(int8_tensor({2, 4}, std::vector<std::int8_t>(8, 0)));
  EXPECT_THROW(b.op(ir::Op::dequantize, {data, b.constant(Tensor::from_floats({3}, std::vector<float>{1, 1, 1}))}),
               Error);
  EXPECT_THROW(b.op(ir::Op::dequantize, {data, b.constant(Tensor::from_floats({2, 3}, std::vector<float>(6, 1)))}),
               Error);
  EXPECT_THROW(b.op(ir::Op::dequantize, {b.constant(Tensor::scalar(1.0f)), b.constant(Tensor::scalar(1.0f))}), Error);
}

}  // namespace
}  // namespace orion::exec
