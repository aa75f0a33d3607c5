// An MLX folder's 4-bit matrices in the ANE's uint4 form: the values are the folder's nibbles,
// and scale * (q - offset) in the fp16 the kernels hold gives the folder's weights within that
// rounding (the folder's own dequantization is tested against MLX's goldens).
#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "core/random.h"
#include "model/mlx_ane_weights.h"

namespace orion::model {
namespace {

TEST(MlxAneWeights, HoldTheFoldersNibblesAndGiveItsWeightsInFp16) {
  Rng rng(7);
  Tensor w(DType::f32, {48, 256});
  for (float& v : w.span<float>()) v = rng.normal(0.01f, 0.02f);
  QuantizedMatrices q;
  q.emplace("m.weight", quantize(w, {.bits = 4, .group = 64}));
  q.emplace("e.weight", quantize(w, {.bits = 8, .group = 64}));  // not 4 bits: left out
  const compile::Int4Weights own = mlx_int4_weights(q);
  ASSERT_EQ(own.size(), 1u);
  const compile::Int4Weight& i4 = own.at("m.weight");
  ASSERT_EQ(i4.values.shape(), (Shape{48, 256}));
  ASSERT_EQ(i4.block(), 64);
  const Tensor widened = dequantize(q.at("m.weight"));
  const auto* words = reinterpret_cast<const std::uint32_t*>(q.at("m.weight").words.raw());
  double err = 0, norm = 0;
  for (std::int64_t r = 0; r < 48; ++r)
    for (std::int64_t c = 0; c < 256; ++c) {
      const std::int64_t at = r * 256 + c;
      const std::uint32_t nibble = (words[at / 8] >> (4 * (at % 8))) & 0xF;
      ASSERT_EQ(i4.values.data<std::uint8_t>()[at], nibble) << r << "," << c;
      const std::int64_t g = r * 4 + c / 64;
      const float s = half_to_float(i4.scale.data<std::uint16_t>()[g]), z = half_to_float(i4.offset->data<std::uint16_t>()[g]);
      const double d = s * (static_cast<float>(nibble) - z) - widened.data<float>()[at];
      err += d * d;
      norm += static_cast<double>(widened.data<float>()[at]) * widened.data<float>()[at];
    }
  EXPECT_LT(std::sqrt(err / norm), 2e-3);
}

}  // namespace
}  // namespace orion::model
