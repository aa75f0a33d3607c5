// The 4-bit quantizers and the pass that puts them in kernels: int4 and uint4 within their
// rounding bounds of the weights, values quantized elsewhere checked and kept, LUT4 tables
// fitted by k-means closer than the uniform table they start from, and the pass's conv on each
// form against the same conv on the dequantized weights, computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>

#include "compile/mil/mil_constexpr.h"
#include "compile/passes/int4_weights.h"
#include "compile/passes/lut4_weights.h"
#include "compile/passes/quantize_weights.h"
#include "compile/mil_test_util.h"
#include "core/half.h"

namespace orion::compile {
namespace {

using testing::error_of;

Tensor gaussian(Shape shape, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(rng.normal()) * 0.05f;
  return Tensor::from_floats(std::move(shape), v);
}

float f16(std::uint16_t h) { return half_to_float(h); }

TEST(Quantize4Bit, Int4WithinHalfAStepUint4WithinAStep) {
  const Tensor w = gaussian({24, 64}, 1);
  for (const Int4Mode mode : {Int4Mode::symmetric, Int4Mode::affine}) {
    const Int4Weight q = quantize_int4(w, 16, mode, "w");
    ASSERT_EQ(q.block(), 16);
    ASSERT_EQ(q.scale.shape(), (Shape{24, 4}));
    ASSERT_EQ(q.offset.has_value(), mode == Int4Mode::affine);
    for (std::int64_t r = 0; r < 24; ++r)
      for (std::int64_t c = 0; c < 64; ++c) {
        const std::int64_t k = r * 4 + c / 16;
        const float s = f16(q.scale.data<std::uint16_t>()[k]);
        const float z = q.offset ? q.offset->data<std::uint8_t>()[k] : 0.0f;
        const float v = mode == Int4Mode::affine ? q.values.data<std::uint8_t>()[r * 64 + c] : q.values.data<std::int8_t>()[r * 64 + c];
        const float x = w.data<float>()[r * 64 + c];
        // Symmetric rounds within half a step; affine also rounds its zero point, within a step.
        EXPECT_LE(std::fabs(s * (v - z) - x), (mode == Int4Mode::affine ? 1.0f : 0.5f) * s * 1.001f) << r << "," << c;
      }
  }
  // A block of zeros, and one of a single value, are exact in both.
  Tensor flat = Tensor::from_floats({2, 8}, std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 3, 3});
  for (const Int4Mode mode : {Int4Mode::symmetric, Int4Mode::affine}) {
    const Int4Weight q = quantize_int4(flat, 0, mode, "flat");
    const float s = f16(q.scale.data<std::uint16_t>()[1]);
    const float z = q.offset ? q.offset->data<std::uint8_t>()[1] : 0.0f;
    const float v = mode == Int4Mode::affine ? q.values.data<std::uint8_t>()[8] : q.values.data<std::int8_t>()[8];
    EXPECT_NEAR(s * (v - z), 3.0f, 3.0f * 1e-3f);
    EXPECT_EQ(f16(q.scale.data<std::uint16_t>()[0]), 0.0f);
  }
  EXPECT_NE(error_of([&] { quantize_int4(w, 24, Int4Mode::symmetric, "layer.q"); })
                .find("4-bit weight layer.q: blocks of 24 input channels do not divide its 64"),
            std::string::npos);
}

// Values quantized elsewhere (an MLX folder's uint4, scales and offsets) go in as they are,
// checked.
TEST(Quantize4Bit, AlreadyQuantizedValuesAreCheckedAndKept) {
  Tensor v(DType::u8, {4, 64});
  for (std::int64_t i = 0; i < v.numel(); ++i) v.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i % 16);
  const Tensor s = Tensor::from_floats({4, 2}, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f});
  const Tensor z = Tensor::from_floats({4, 2}, std::vector<float>{7.5f, 8, 8, 8, 8, 8, 8, 8});
  const Int4Weight q = int4_weight(v, s, z, "mlx.q");
  EXPECT_EQ(q.block(), 32);
  EXPECT_EQ(q.scale.dtype(), DType::f16);
  EXPECT_EQ(q.offset->dtype(), DType::f16);
  EXPECT_EQ(q.values.data<std::uint8_t>()[17], 1);
  Tensor bad = v.clone();
  bad.data<std::uint8_t>()[9] = 16;
  EXPECT_NE(error_of([&] { int4_weight(bad, s, z, "mlx.q"); }).find("4-bit weight mlx.q: uint4 value 16 at element 9 is outside [0, 15]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { int4_weight(v, Tensor::from_floats({4, 3}, std::vector<float>(12, 1)), std::nullopt, "mlx.q"); })
                .find("scale [4, 3] for values [4, 64]"),
            std::string::npos);
  Tensor zi(DType::i8, {4, 2});
  EXPECT_NE(error_of([&] { int4_weight(v, s, zi, "mlx.q"); }).find("an integer offset has the values' type (u8), not i8"),
            std::string::npos);
}

TEST(Quantize4Bit, KMeansTablesBeatTheUniformTableTheyStartFrom) {
  const Tensor w = gaussian({32, 96}, 2);
  const Lut4Weight q = palettize_lut4(w, 8, "w");
  ASSERT_EQ(q.lut.shape(), (Shape{4, 16}));
  ASSERT_EQ(q.group(), 8);
  double fitted = 0, uniform = 0, total = 0;
  for (std::int64_t t = 0; t < 4; ++t) {
    float lo = 1e9f, hi = -1e9f;
    for (std::int64_t i = t * 8 * 96; i < (t + 1) * 8 * 96; ++i) {
      lo = std::min(lo, w.data<float>()[i]);
      hi = std::max(hi, w.data<float>()[i]);
    }
    for (std::int64_t k = 1; k < 16; ++k) EXPECT_LE(f16(q.lut.data<std::uint16_t>()[t * 16 + k - 1]), f16(q.lut.data<std::uint16_t>()[t * 16 + k]));
    for (std::int64_t i = t * 8 * 96; i < (t + 1) * 8 * 96; ++i) {
      const float x = w.data<float>()[i];
      const float got = f16(q.lut.data<std::uint16_t>()[t * 16 + q.codes.data<std::uint8_t>()[i]]);
      const float step = (hi - lo) / 15;
      const float u = lo + step * std::nearbyint((x - lo) / step);
      fitted += (got - x) * (got - x);
      uniform += (u - x) * (u - x);
      total += x * x;
    }
  }
  std::cout << "[ info ] LUT4 rel L2 error: k-means " << std::sqrt(fitted / total) << ", uniform " << std::sqrt(uniform / total) << "\n";
  EXPECT_LT(fitted, uniform);
  EXPECT_LT(std::sqrt(fitted / total), 0.12);
  // Deterministic.
  const Lut4Weight again = palettize_lut4(w, 8, "w");
  EXPECT_EQ(std::memcmp(again.lut.raw(), q.lut.raw(), q.lut.nbytes()), 0);
  EXPECT_EQ(std::memcmp(again.codes.raw(), q.codes.raw(), q.codes.nbytes()), 0);
  // Few values are kept exactly: a rotation's 0, 1 and -1.
  const Lut4Weight r = palettize_lut4(Tensor::from_floats({2, 4}, std::vector<float>{0, 1, -1, 0, 1, 0, 0, -1}), 0, "rot");
  for (std::int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(f16(r.lut.data<std::uint16_t>()[r.codes.data<std::uint8_t>()[i]]), (std::vector<float>{0, 1, -1, 0, 1, 0, 0, -1}[static_cast<std::size_t>(i)]));
  EXPECT_NE(error_of([&] { palettize_lut4(w, 5, "layer.w"); }).find("LUT4 weight layer.w: groups of 5 output channels do not divide its 32"),
            std::string::npos);
}

// The pass on a conv of a const weight [O, C, 1, 1], in each form: the conv then reads the form
// (a LUT or a 4-bit dequantize), and computes what the conv of the weight dequantized here does.
TEST(Quantize4Bit, ThePassPutsEachFormInTheConv) {
  for (const WeightForm form : {WeightForm::int4, WeightForm::uint4, WeightForm::lut4}) {
    SCOPED_TRACE(std::string(weight_form_name(form)));
    ir::Builder b("k");
    const ir::Value x = b.input("x", DType::f16, {1, 64, 1, 32});
    const Tensor W = gaussian({48, 64, 1, 1}, 3).to(DType::f16);
    const ir::Value w = b.name(b.constant(W), "lin.weight.conv");
    b.output(b.name(b.conv(x, w), "y"));
    ir::Graph g = b.finish();
    const QuantizeWeightsStats st = quantize_weights(g, form, form == WeightForm::lut4 ? 16 : 32);
    EXPECT_EQ(st.quantized, 1);
    const ir::Node& wq = g.node(g.node(*g.find("y")).inputs[1]);
    // The dequantized weight, from the consts the pass made.
    std::vector<float> dense(48 * 64);
    if (form == WeightForm::lut4) {
      const std::optional<LutForm> f = lut_form(g, g.node(*g.find("y")).inputs[1]);
      ASSERT_TRUE(f);
      EXPECT_EQ(f->tables, (Shape{3, 1, 1, 1}));
      EXPECT_EQ(wq.name, "lin_weight_conv_lut4");
      const Tensor lut = g.node(f->lut).attr<Tensor>("value");
      const Tensor idx = g.node(f->indices).attr<Tensor>("value");
      for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = f16(lut.data<std::uint16_t>()[idx.data<std::int32_t>()[i]]);
    } else {
      ASSERT_EQ(wq.op, ir::Op::dequantize);
      EXPECT_EQ(wq.attr_int("bits"), 4);
      const Tensor q = g.node(wq.inputs[0]).attr<Tensor>("value");
      const Tensor s = g.node(wq.inputs[1]).attr<Tensor>("value");
      ASSERT_EQ(s.shape(), (Shape{48, 2, 1, 1}));
      for (std::size_t i = 0; i < dense.size(); ++i) {
        const std::size_t blk = i / 64 * 2 + i % 64 / 32;
        const float z = wq.inputs.size() > 2 ? g.node(wq.inputs[2]).attr<Tensor>("value").data<std::uint8_t>()[blk] : 0.0f;
        const float v = form == WeightForm::int4 ? q.data<std::int8_t>()[i] : q.data<std::uint8_t>()[i];
        dense[i] = half_to_float(float_to_half(f16(s.data<std::uint16_t>()[blk]) * (v - z)));
      }
    }
    ir::Builder r("k");
    const ir::Value rx = r.input("x", DType::f16, {1, 64, 1, 32});
    r.output(r.name(r.conv(rx, r.constant(Tensor::from_floats({48, 64, 1, 1}, dense).to(DType::f16))), "y"));
    const TensorMap in = testing::random_inputs(g, 7);
    const Tensor got = testing::run_f16(g, in)[0], want = testing::run_f16(r.finish(), in)[0];
    EXPECT_TRUE(testing::same_bits(got, want));
  }
  // Small weights (at most 2048 values) stay fp16 in the 4-bit forms.
  ir::Builder b("k");
  const ir::Value x = b.input("x", DType::f16, {1, 32, 1, 32});
  b.output(b.conv(x, b.constant(gaussian({32, 32, 1, 1}, 4).to(DType::f16))));
  ir::Graph g = b.finish();
  EXPECT_EQ(quantize_weights(g, WeightForm::lut4, 8).quantized, 0);
}

}  // namespace
}  // namespace orion::compile
