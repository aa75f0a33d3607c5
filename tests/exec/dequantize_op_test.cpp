// The dequantize and quantize ops on the CPU executor: blockwise scales and zero points, half to
// even rounding and saturation, the values written out here by hand.
#include <gtest/gtest.h>

#include "core/error.h"
#include "exec/cpu/executor.h"
#include "exec/op_test_util.h"
#include "ir/builder.h"

namespace orion::exec {
namespace {

[[maybe_unused]] const bool kQuantizeOpsRegistered = test::mark_tested({ir::Op::dequantize, ir::Op::quantize, ir::Op::dequantize_affine});

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

// MLX's form: the bytes of little-endian uint32 words, values from the lowest bits up, and
// scale * q + bias per group along the row.
TEST(DequantizeAffineOp, UnpacksFromTheLowestBitsAndAppliesEachGroupsScaleAndBias) {
  ir::Builder b("dqa");
  // 4 bits, one row of 64 values in two groups of 32: byte i holds q = i % 16 (low nibble) and
  // 15 - i % 16 (high nibble), so value 2i is i % 16 and value 2i + 1 is 15 - i % 16.
  Tensor words(DType::u8, {1, 32});
  for (int i = 0; i < 32; ++i) words.span<std::uint8_t>()[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((i % 16) | ((15 - i % 16) << 4));
  const ir::Value scale = b.constant(Tensor::from_floats({1, 2}, std::vector<float>{0.5f, -2.0f}));
  const ir::Value bias = b.constant(Tensor::from_floats({1, 2}, std::vector<float>{1.0f, 3.0f}));
  b.output(b.op(ir::Op::dequantize_affine, {b.constant(words), scale, bias}, {{"bits", std::int64_t{4}}}));
  // 8 bits: the bytes are the values; one group of 32, two rows.
  Tensor bytes(DType::u8, {2, 32});
  for (int i = 0; i < 64; ++i) bytes.span<std::uint8_t>()[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i * 4);
  b.output(b.op(ir::Op::dequantize_affine, {b.constant(bytes), b.constant(Tensor::from_floats({2, 1}, std::vector<float>{0.25f, 1.0f})),
                                           b.constant(Tensor::from_floats({2, 1}, std::vector<float>{-1.0f, 0.0f}))},
                {{"bits", std::int64_t{8}}}));
  const std::vector<Tensor> out = CpuExecutor(b.finish(), {Numerics::f32, 1}).run({});
  ASSERT_EQ(out[0].shape(), (Shape{1, 64}));
  const std::vector<float> v = out[0].to_floats();
  for (int c = 0; c < 64; ++c) {
    const int byte = c / 2, q = c % 2 == 0 ? byte % 16 : 15 - byte % 16;
    const float want = c < 32 ? 0.5f * static_cast<float>(q) + 1.0f : -2.0f * static_cast<float>(q) + 3.0f;
    EXPECT_EQ(v[static_cast<std::size_t>(c)], want) << "column " << c;
  }
  const std::vector<float> e = out[1].to_floats();
  EXPECT_EQ(e[1], 0.25f * 4 - 1);
  EXPECT_EQ(e[33], 132.0f);
}

TEST(DequantizeAffineOp, RefusesRowsThatAreNotWholeWordsAndGroupsOutsideMlxs) {
  ir::Builder b("bad");
  int n = 0;
  const auto op = [&](Shape data, Shape scale, std::int64_t bits) {
    const std::string k = std::to_string(n++);
    const ir::Value q = b.input("q" + k, DType::u8, data), s = b.input("s" + k, DType::f32, scale),
                    z = b.input("z" + k, DType::f32, scale);
    return b.op(ir::Op::dequantize_affine, {q, s, z}, {{"bits", bits}});
  };
  EXPECT_NO_THROW(op({2, 32}, {2, 2}, 4));  // 64 values in groups of 32
  EXPECT_THROW(op({2, 30}, {2, 2}, 4), Error);  // not whole words
  EXPECT_THROW(op({2, 32}, {2, 4}, 4), Error);  // groups of 16
  EXPECT_THROW(op({2, 32}, {2, 2}, 7), Error);  // 7 bits
  EXPECT_THROW(op({2, 32}, {1, 2}, 4), Error);  // scale rows are not data's
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
