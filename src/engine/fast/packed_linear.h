#pragma once
// A linear layer for decoding: W as [out, in] rows (so that each output is one contiguous dot
// product that the GEMV kernels stream once), in f32, f16, per-block int8 or MLX's affine 4-bit,
// with an optional f32 bias.
//
// The layer either owns its storage (pack(): a transposed / converted copy made at startup) or
// borrows it (borrow(): tensors already in this layout, typically zero-copy views into a model
// file written by `orion convert`, whose mapping the tensors keep alive). Both are held as
// Tensors, so the two cases run the same code.
#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "exec/cpu/gemv_q4.h"
#include "model/formats/mlx_quantization.h"
#include "model/weight_dtype.h"

namespace orion::engine {

class PackedLinear {
 public:
  PackedLinear() = default;
  // `w` is f32; `in_out` says it is stored [in, out] (GPT-2's Conv1D) rather than [out, in].
  // `bias` may be undefined. A copy: `w` and `bias` may be dropped afterwards.
  // q4 quantizes `w` as MLX does (model::quantize) in groups of kQ4Group, or of 32 when a row
  // is not a whole number of those.
  static PackedLinear pack(const Tensor& w, bool in_out, const Tensor& bias, model::WeightDType dtype,
                           int q8_block = model::kQ8Block);
  // A 4-bit matrix as an MLX folder stores it: its words shared (no copy), its scales and biases
  // interleaved into the (scale, bias) pairs gemv_q4 reads. Throws orion::Error for another
  // number of bits.
  static PackedLinear from_quantized(const model::QuantizedMatrix& m, Tensor bias);
  // No copy: `w` is [out, in] and contiguous, of dtype f32 (WeightDType::f32), f16 (f16) or i8
  // (q8); `scales` (q8 only, else undefined) is f32 [out, in / block], which sets the block
  // (32 or 64); `bias` is f32 [out] or undefined. The layer shares the tensors' storage.
  // Throws orion::Error for any other dtype, shape or block.
  static PackedLinear borrow(Tensor w, Tensor scales, Tensor bias, model::WeightDType dtype);
  exec::cpu::Q4Weights q4_weights() const;

  // y = act(W x + b), over the pool's threads, with the kernels of `isa`.
  void apply(const float* x, float* y, ThreadPool& pool, exec::cpu::Isa isa = exec::cpu::best_isa(),
             exec::cpu::Activation act = exec::cpu::Activation::none) const;
  // Y_j = act(W X_j + b) for n vectors (rows of X, `cols()` floats; rows of Y, `rows()`), W read
  // once for them all (every dtype has a batched kernel), each Y_j the bits apply() gives X_j alone.
  void apply_columns(const float* X, std::int64_t n, float* Y, ThreadPool& pool, exec::cpu::Isa isa = exec::cpu::best_isa(),
                     exec::cpu::Activation act = exec::cpu::Activation::none) const;
  // Row r of W as floats (embedding lookups from a tied head).
  void row(std::int64_t r, float* out) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  model::WeightDType dtype() const { return dtype_; }
  int q8_block() const { return dtype_ == model::WeightDType::q8 ? block_ : 0; }
  int q4_group() const { return dtype_ == model::WeightDType::q4 ? block_ : 0; }
  // Bytes one apply() reads: the weights (and scales), not the bias.
  std::size_t weight_bytes() const;
  // Bytes of weights, scales and bias this layer allocated itself (0 when it borrows them).
  std::size_t owned_bytes() const { return owned_bytes_; }
  // The stored form: W [out, in] (q4: u32 words [out, in / 8]), the q8 scales or the q4 (scale,
  // bias) pairs (undefined for f32 and f16), the bias (may be undefined).
  const Tensor& weight() const { return w_; }
  const Tensor& scales() const { return scales_; }
  const Tensor& bias() const { return bias_; }

  // For matrix-matrix products (batched prefill), which hand W to the BLAS as f32 [out, in]:
  // the f32 rows themselves (nullptr unless dtype() is f32; f16 and q8 go through row()), and
  // the bias (nullptr when there is none).
  const float* f32_data() const { return dtype_ == model::WeightDType::f32 ? w_.data<float>() : nullptr; }
  const float* bias_data() const { return bias_.defined() ? bias_.data<float>() : nullptr; }

 private:
  model::WeightDType dtype_ = model::WeightDType::f32;
  std::int64_t rows_ = 0, cols_ = 0;
  int block_ = 0;  // q8's block or q4's group
  Tensor w_;       // f32, f16 or i8 [rows, cols], or q4's u32 words [rows, cols / 8]; contiguous
  Tensor scales_;  // q8: f32 [rows, cols / block_]; q4: f32 [rows, cols / block_ * 2] (scale, bias) pairs
  Tensor bias_;    // f32 [rows]
  std::size_t owned_bytes_ = 0;
};

}  // namespace orion::engine
