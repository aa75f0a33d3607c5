// dequantize and quantize: affine integer <-> float with one scale (and zero point) per block.
//
// A scale of data's rank with dims s[d] gives block sizes data[d] / s[d]: element i uses
// scale[i[d] / block[d]] (per-output-channel weights: block 1 on the output axis, the whole
// dim on the others). A scalar scale is one block. quantize rounds half to even, as numpy and
// coremltools' quantize do, and saturates at the dtype's range.
#include <cmath>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"
#include "exec/cpu/quantize_affine.h"

namespace orion::exec::cpu::kernels {

namespace {

// Flat index into a blockwise operand for each flat index of data, computed per element.
class BlockIndex {
 public:
  BlockIndex(const Shape& data, const Tensor& t) : data_(data) {
    scalar_ = t.numel() == 1;
    if (scalar_) return;
    const Shape& s = t.shape();
    block_.resize(s.size());
    stride_.resize(s.size());
    std::int64_t st = 1;
    for (std::size_t d = s.size(); d-- > 0;) {
      block_[d] = data[d] / s[d];
      stride_[d] = st;
      st *= s[d];
    }
  }
  std::int64_t operator()(std::int64_t flat) const {
    if (scalar_) return 0;
    std::int64_t at = 0;
    for (std::size_t d = data_.size(); d-- > 0;) {
      const std::int64_t i = flat % data_[d];
      flat /= data_[d];
      at += (i / block_[d]) * stride_[d];
    }
    return at;
  }

 private:
  Shape data_;
  bool scalar_ = true;
  std::vector<std::int64_t> block_, stride_;
};

// Element i of an operand as float, whatever its compute storage.
float element(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::i8: return t.data<std::int8_t>()[i];
    case DType::u8: return t.data<std::uint8_t>()[i];
    case DType::i32: return static_cast<float>(t.data<std::int32_t>()[i]);
    default: return t.data<float>()[i];
  }
}

}  // namespace

void dequantize(const KernelArgs& a) {
  const Tensor& data = a.inputs[0];
  const Tensor& scale = a.inputs[1];
  const Tensor* zero = a.inputs.size() > 2 ? &a.inputs[2] : nullptr;
  const BlockIndex si(data.shape(), scale);
  const BlockIndex zi(data.shape(), zero ? *zero : scale);
  float* out = a.output.data<float>();
  a.pool.parallel_for(0, data.numel(), detail::grain_for(4), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const float z = zero ? element(*zero, zi(i)) : 0.0f;
      out[i] = (element(data, i) - z) * scale.data<float>()[si(i)];
    }
  });
}

void quantize(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const Tensor& scale = a.inputs[1];
  const Tensor* zero = a.inputs.size() > 2 ? &a.inputs[2] : nullptr;
  const BlockIndex si(x.shape(), scale);
  const BlockIndex zi(x.shape(), zero ? *zero : scale);
  const bool is_signed = a.output.dtype() == DType::i8;
  const float lo_v = is_signed ? -128.0f : 0.0f, hi_v = is_signed ? 127.0f : 255.0f;
  a.pool.parallel_for(0, x.numel(), detail::grain_for(4), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const float z = zero ? element(*zero, zi(i)) : 0.0f;
      const float q = std::clamp(std::nearbyint(x.data<float>()[i] / scale.data<float>()[si(i)] + z), lo_v, hi_v);
      if (is_signed) a.output.data<std::int8_t>()[i] = static_cast<std::int8_t>(q);
      else a.output.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(q);
    }
  });
}

// MLX's form, by the same routine that reads its folders: each row's words as uint32 (a row is
// whole words, and the bytes are their little-endian layout).
void dequantize_affine(const KernelArgs& a) {
  const Tensor& data = a.inputs[0];
  const Tensor& scale = a.inputs[1];
  const Tensor& bias = a.inputs[2];
  const std::int64_t cols = a.output.dim(-1), rows = a.output.numel() / cols;
  const AffineFormat f{.bits = static_cast<int>(a.node.attr_int("bits")), .group = static_cast<int>(cols / scale.dim(-1))};
  const std::int64_t words = data.dim(-1) / 4, groups = scale.dim(-1);
  const auto* q = reinterpret_cast<const std::uint32_t*>(data.raw());
  a.pool.parallel_for(0, rows, detail::grain_for(cols), [&](std::int64_t lo, std::int64_t hi) {
    cpu::dequantize_affine(q + lo * words, scale.data<float>() + lo * groups, bias.data<float>() + lo * groups, hi - lo,
                           cols, f, a.output.data<float>() + lo * cols);
  });
}

}  // namespace orion::exec::cpu::kernels
