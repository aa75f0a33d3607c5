#include "model/mlx_ane_weights.h"

namespace orion::model {

compile::Int4Weights mlx_int4_weights(const QuantizedMatrices& quantized) {
  compile::Int4Weights out;
  for (const auto& [name, m] : quantized) {
    if (m.format.bits != 4) continue;
    const std::int64_t rows = m.rows(), cols = m.cols();
    // A row's words hold 8 values each from the lowest bits up: byte b of the row holds values
    // 2b (low nibble) and 2b + 1 (high), in the words' little-endian layout.
    const Tensor words = m.words.contiguous();
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(words.raw());
    Tensor values(DType::u8, {rows, cols});
    std::uint8_t* v = values.data<std::uint8_t>();
    for (std::int64_t i = 0; i < rows * cols / 2; ++i) {
      v[2 * i] = bytes[i] & 0xF;
      v[2 * i + 1] = bytes[i] >> 4;
    }
    Tensor offset(DType::f32, m.scales.shape());
    const Tensor scales = m.scales.contiguous(), biases = m.biases.contiguous();
    const float* s = scales.data<float>();
    const float* b = biases.data<float>();
    for (std::int64_t i = 0; i < offset.numel(); ++i) offset.data<float>()[i] = s[i] != 0 ? -b[i] / s[i] : 0.0f;
    out.emplace(name, compile::int4_weight(std::move(values), m.scales, std::move(offset), name));
  }
  return out;
}

}  // namespace orion::model
