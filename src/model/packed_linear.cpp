#include "model/packed_linear.h"

#include "core/error.h"
#include "core/half.h"
#include "exec/cpu/quantize.h"

namespace orion::model {

std::string_view weight_dtype_name(WeightDType t) {
  switch (t) {
    case WeightDType::f32: return "f32";
    case WeightDType::f16: return "f16";
    case WeightDType::q8: return "q8";
  }
  return "?";
}

WeightDType weight_dtype_from_name(std::string_view name) {
  for (WeightDType t : {WeightDType::f32, WeightDType::f16, WeightDType::q8})
    if (weight_dtype_name(t) == name) return t;
  throw Error("unknown weight dtype '" + std::string(name) + "' (f32, f16 or q8)");
}

PackedLinear PackedLinear::pack(const Tensor& w, bool in_out, const Tensor& bias, WeightDType dtype) {
  if (w.rank() != 2 || w.dtype() != DType::f32) throw Error("pack: weight must be f32 [rows, cols], got " + shape_str(w.shape()));
  PackedLinear p;
  p.dtype_ = dtype;
  p.rows_ = in_out ? w.dim(1) : w.dim(0);
  p.cols_ = in_out ? w.dim(0) : w.dim(1);
  const auto n = static_cast<std::size_t>(p.rows_ * p.cols_);
  const Tensor src = w.contiguous();
  std::vector<float> transposed;
  std::span<const float> v = src.span<float>();
  if (in_out) {
    // [in, out] -> [out, in] in 64 x 64 tiles: an element-by-element strided copy of the
    // 124M model's matrices takes seconds.
    transposed.resize(n);
    const float* in = v.data();
    const std::int64_t R = p.cols_, C = p.rows_;  // the source is [R, C]
    for (std::int64_t r0 = 0; r0 < R; r0 += 64)
      for (std::int64_t c0 = 0; c0 < C; c0 += 64)
        for (std::int64_t c = c0; c < std::min(c0 + 64, C); ++c)
          for (std::int64_t r = r0; r < std::min(r0 + 64, R); ++r)
            transposed[static_cast<std::size_t>(c * R + r)] = in[r * C + c];
    v = transposed;
  }
  switch (dtype) {
    case WeightDType::f32: p.f32_.assign(v.begin(), v.end()); break;
    case WeightDType::f16:
      p.f16_.resize(n);
      floats_to_halves(v, p.f16_);
      break;
    case WeightDType::q8:
      if (p.cols_ % kQ8Block != 0)
        throw Error("q8: a row of " + std::to_string(p.cols_) + " weights is not a whole number of blocks of " +
                    std::to_string(kQ8Block));
      p.q8_.resize(n);
      p.scales_.resize(n / kQ8Block);
      exec::cpu::quantize_q8(v.data(), p.rows_, p.cols_, kQ8Block, p.q8_.data(), p.scales_.data());
      break;
  }
  if (bias.defined()) {
    if (bias.numel() != p.rows_) throw Error("pack: bias " + shape_str(bias.shape()) + " does not match " + std::to_string(p.rows_) + " outputs");
    const auto b = bias.contiguous().span<float>();
    p.bias_.assign(b.begin(), b.end());
  }
  return p;
}

void PackedLinear::apply(const float* x, float* y, ThreadPool& pool, exec::cpu::Isa isa,
                         exec::cpu::Activation act) const {
  const float* b = bias_.empty() ? nullptr : bias_.data();
  switch (dtype_) {
    case WeightDType::f32: exec::cpu::gemv_f32(f32_.data(), x, b, y, rows_, cols_, pool, isa, act); break;
    case WeightDType::f16: exec::cpu::gemv_f16(f16_.data(), x, b, y, rows_, cols_, pool, isa, act); break;
    case WeightDType::q8:
      exec::cpu::gemv_q8({q8_.data(), scales_.data(), rows_, cols_, kQ8Block}, x, b, y, pool, isa, act);
      break;
  }
}

void PackedLinear::row(std::int64_t r, float* out) const {
  const auto off = static_cast<std::size_t>(r * cols_);
  const auto n = static_cast<std::size_t>(cols_);
  switch (dtype_) {
    case WeightDType::f32: std::copy_n(f32_.data() + off, n, out); break;
    case WeightDType::f16: halves_to_floats(std::span(f16_.data() + off, n), std::span(out, n)); break;
    case WeightDType::q8:
      exec::cpu::dequantize_q8(q8_.data() + off, scales_.data() + off / kQ8Block, 1, cols_, kQ8Block, out);
      break;
  }
}

std::size_t PackedLinear::weight_bytes() const {
  return f32_.size() * sizeof(float) + f16_.size() * sizeof(std::uint16_t) + q8_.size() + scales_.size() * sizeof(float);
}

}  // namespace orion::model
