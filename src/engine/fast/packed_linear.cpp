#include "engine/fast/packed_linear.h"

#include <algorithm>

#include "core/error.h"
#include "core/half.h"
#include "exec/cpu/quantize.h"

namespace orion::engine {

namespace {

DType storage_dtype(model::WeightDType t) {
  switch (t) {
    case model::WeightDType::f32: return DType::f32;
    case model::WeightDType::f16: return DType::f16;
    case model::WeightDType::q8: return DType::i8;
    case model::WeightDType::q4: return DType::u32;
  }
  return DType::f32;
}

// MLX's scales and biases [rows, groups] as the (scale, bias) pairs gemv_q4 reads.
Tensor interleave_scale_bias(const Tensor& scales, const Tensor& biases) {
  const Tensor s = scales.contiguous(), b = biases.contiguous();
  Tensor out(DType::f32, {s.dim(0), s.dim(1) * 2});
  const float *sp = s.data<float>(), *bp = b.data<float>();
  float* o = out.data<float>();
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    o[2 * i] = sp[i];
    o[2 * i + 1] = bp[i];
  }
  return out;
}

}  // namespace

PackedLinear PackedLinear::pack(const Tensor& w, bool in_out, const Tensor& bias, model::WeightDType dtype, int q8_block) {
  if (w.rank() != 2 || w.dtype() != DType::f32) throw Error("pack: weight must be f32 [rows, cols], got " + shape_str(w.shape()));
  const std::int64_t rows = in_out ? w.dim(1) : w.dim(0);
  const std::int64_t cols = in_out ? w.dim(0) : w.dim(1);
  const Tensor src = w.contiguous();
  Tensor transposed;
  std::span<const float> v = src.span<float>();
  if (in_out) {
    // [in, out] -> [out, in] in 64 x 64 tiles: an element-by-element strided copy of the
    // 124M model's matrices takes seconds.
    transposed = Tensor(DType::f32, {rows, cols});
    float* out = transposed.data<float>();
    const float* in = v.data();
    const std::int64_t R = cols, C = rows;  // the source is [R, C]
    for (std::int64_t r0 = 0; r0 < R; r0 += 64)
      for (std::int64_t c0 = 0; c0 < C; c0 += 64)
        for (std::int64_t c = c0; c < std::min(c0 + 64, C); ++c)
          for (std::int64_t r = r0; r < std::min(r0 + 64, R); ++r)
            out[c * R + r] = in[r * C + c];
    v = transposed.span<float>();
  }
  if (dtype == model::WeightDType::q4) {
    const int group = cols % model::kQ4Group == 0 ? model::kQ4Group : 32;
    const Tensor rows_f32 = in_out ? transposed : src;
    PackedLinear p = from_quantized(model::quantize(rows_f32, {.bits = 4, .group = group}),
                                    bias.defined() ? bias.contiguous().reshape({rows}).clone() : Tensor{});
    p.owned_bytes_ = p.w_.nbytes() + p.scales_.nbytes() + (p.bias_.defined() ? p.bias_.nbytes() : 0);
    return p;
  }
  Tensor stored, scales;
  switch (dtype) {
    case model::WeightDType::f32: stored = in_out ? transposed : src.clone(); break;
    case model::WeightDType::f16:
      stored = Tensor(DType::f16, {rows, cols});
      floats_to_halves(v, stored.span<std::uint16_t>());
      break;
    case model::WeightDType::q8:
      if (q8_block <= 0 || cols % q8_block != 0)
        throw Error("q8: a row of " + std::to_string(cols) + " weights is not a whole number of blocks of " +
                    std::to_string(q8_block));
      stored = Tensor(DType::i8, {rows, cols});
      scales = Tensor(DType::f32, {rows, cols / q8_block});
      exec::cpu::quantize_q8(v.data(), rows, cols, q8_block, stored.data<std::int8_t>(), scales.data<float>());
      break;
    case model::WeightDType::q4: break;  // above
  }
  Tensor b;
  if (bias.defined()) {
    if (bias.numel() != rows) throw Error("pack: bias " + shape_str(bias.shape()) + " does not match " + std::to_string(rows) + " outputs");
    b = bias.contiguous().reshape({rows}).clone();
  }
  PackedLinear p = borrow(std::move(stored), std::move(scales), std::move(b), dtype);
  p.owned_bytes_ = p.w_.nbytes() + (p.scales_.defined() ? p.scales_.nbytes() : 0) + (p.bias_.defined() ? p.bias_.nbytes() : 0);
  return p;
}

PackedLinear PackedLinear::from_quantized(const model::QuantizedMatrix& m, Tensor bias) {
  if (m.format.bits != 4)
    throw Error("linear layer (q4): the matrix is " + exec::cpu::affine_format_name(m.format) + ", not 4-bit");
  PackedLinear p = borrow(m.words.contiguous(), interleave_scale_bias(m.scales, m.biases), std::move(bias), model::WeightDType::q4);
  p.owned_bytes_ = p.scales_.nbytes();
  return p;
}

PackedLinear PackedLinear::borrow(Tensor w, Tensor scales, Tensor bias, model::WeightDType dtype) {
  const std::string what = "linear layer (" + std::string(model::weight_dtype_name(dtype)) + ")";
  if (!w.defined() || w.rank() != 2 || w.dtype() != storage_dtype(dtype) || !w.is_contiguous())
    throw Error(what + ": weight must be a contiguous " + std::string(dtype_name(storage_dtype(dtype))) +
                " [out, in] tensor, got " + (w.defined() ? std::string(dtype_name(w.dtype())) + " " + shape_str(w.shape()) : "none"));
  PackedLinear p;
  p.dtype_ = dtype;
  p.rows_ = w.dim(0);
  p.cols_ = w.dim(1);
  if (dtype == model::WeightDType::q4) {
    p.cols_ = w.dim(1) * 8;
    if (!scales.defined() || scales.rank() != 2 || scales.dtype() != DType::f32 || !scales.is_contiguous() ||
        scales.dim(0) != p.rows_ || scales.dim(1) <= 0 || scales.dim(1) % 2 != 0 || p.cols_ % (scales.dim(1) / 2) != 0)
      throw Error(what + ": (scale, bias) pairs must be a contiguous f32 [" + std::to_string(p.rows_) +
                  ", in / group * 2] tensor, got " +
                  (scales.defined() ? std::string(dtype_name(scales.dtype())) + " " + shape_str(scales.shape()) : "none"));
    const std::int64_t group = p.cols_ / (scales.dim(1) / 2);
    if (group != 32 && group != 64 && group != 128)
      throw Error(what + ": groups of " + std::to_string(group) + " weights (32, 64 or 128 are supported)");
    p.block_ = static_cast<int>(group);
    p.scales_ = std::move(scales);
  } else if (dtype == model::WeightDType::q8) {
    if (!scales.defined() || scales.rank() != 2 || scales.dtype() != DType::f32 || !scales.is_contiguous() ||
        scales.dim(0) != p.rows_ || scales.dim(1) <= 0 || p.cols_ % scales.dim(1) != 0)
      throw Error(what + ": scales must be a contiguous f32 [" + std::to_string(p.rows_) + ", in / block] tensor, got " +
                  (scales.defined() ? std::string(dtype_name(scales.dtype())) + " " + shape_str(scales.shape()) : "none"));
    const std::int64_t block = p.cols_ / scales.dim(1);
    if (block != 32 && block != 64)
      throw Error(what + ": " + std::to_string(scales.dim(1)) + " scales per row of " + std::to_string(p.cols_) +
                  " weights make blocks of " + std::to_string(block) + " (32 or 64 are supported)");
    p.block_ = static_cast<int>(block);
    p.scales_ = std::move(scales);
  } else if (scales.defined()) {
    throw Error(what + ": only q8 and q4 weights have scales");
  }
  if (bias.defined()) {
    if (bias.dtype() != DType::f32 || bias.numel() != p.rows_ || !bias.is_contiguous())
      throw Error(what + ": bias must be a contiguous f32 tensor of " + std::to_string(p.rows_) + " elements, got " +
                  std::string(dtype_name(bias.dtype())) + " " + shape_str(bias.shape()));
    p.bias_ = std::move(bias);
  }
  p.w_ = std::move(w);
  return p;
}

void PackedLinear::apply(const float* x, float* y, ThreadPool& pool, exec::cpu::Isa isa,
                         exec::cpu::Activation act) const {
  const float* b = bias_.defined() ? bias_.data<float>() : nullptr;
  switch (dtype_) {
    case model::WeightDType::f32: exec::cpu::gemv_f32(w_.data<float>(), x, b, y, rows_, cols_, pool, isa, act); break;
    case model::WeightDType::f16: exec::cpu::gemv_f16(w_.data<std::uint16_t>(), x, b, y, rows_, cols_, pool, isa, act); break;
    case model::WeightDType::q8:
      exec::cpu::gemv_q8({w_.data<std::int8_t>(), scales_.data<float>(), rows_, cols_, block_}, x, b, y, pool, isa, act);
      break;
    case model::WeightDType::q4: exec::cpu::gemv_q4(q4_weights(), x, b, y, pool, isa, act); break;
  }
}

exec::cpu::Q4Weights PackedLinear::q4_weights() const {
  return {reinterpret_cast<const std::uint8_t*>(w_.data<std::uint32_t>()), scales_.data<float>(), rows_, cols_, block_};
}

void PackedLinear::apply_columns(const float* X, std::int64_t n, float* Y, ThreadPool& pool, exec::cpu::Isa isa,
                                 exec::cpu::Activation act) const {
  const float* b = bias_.defined() ? bias_.data<float>() : nullptr;
  switch (dtype_) {
    case model::WeightDType::f32:
      // The bias and the activation of rows [r0, r1) by the thread that computed them, in
      // apply()'s order.
      exec::cpu::gemv_f32_columns(w_.data<float>(), X, Y, rows_, cols_, n, pool, isa, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t j = 0; j < n; ++j) {
          float* y = Y + j * rows_;
          if (b)
            for (std::int64_t i = r0; i < r1; ++i) y[i] += b[i];
          exec::cpu::apply_activation(act, y + r0, r1 - r0);
        }
      });
      return;
    case model::WeightDType::f16:
      exec::cpu::gemv_f16_columns(w_.data<std::uint16_t>(), X, b, Y, rows_, cols_, n, pool, isa, act);
      return;
    case model::WeightDType::q8:
      exec::cpu::gemv_q8_columns({w_.data<std::int8_t>(), scales_.data<float>(), rows_, cols_, block_}, X, b, Y, n, pool, isa, act);
      return;
    case model::WeightDType::q4: exec::cpu::gemv_q4_columns(q4_weights(), X, b, Y, n, pool, isa, act); return;
  }
}

void PackedLinear::row(std::int64_t r, float* out) const {
  const auto off = static_cast<std::size_t>(r * cols_);
  const auto n = static_cast<std::size_t>(cols_);
  switch (dtype_) {
    case model::WeightDType::f32: std::copy_n(w_.data<float>() + off, n, out); break;
    case model::WeightDType::f16:
      halves_to_floats(std::span(w_.data<std::uint16_t>() + off, n), std::span(out, n));
      break;
    case model::WeightDType::q8:
      exec::cpu::dequantize_q8(w_.data<std::int8_t>() + off, scales_.data<float>() + off / static_cast<std::size_t>(block_),
                               1, cols_, block_, out);
      break;
    case model::WeightDType::q4: exec::cpu::dequantize_q4_row(q4_weights(), r, out); break;
  }
}

std::size_t PackedLinear::weight_bytes() const {
  return (w_.defined() ? w_.nbytes() : 0) + (scales_.defined() ? scales_.nbytes() : 0);
}

}  // namespace orion::engine
