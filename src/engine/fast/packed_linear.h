#pragma once
// A linear layer for decoding: W as [out, in] rows (so that each output is one contiguous dot
// product that the GEMV kernels stream once), in f32, f16 or per-block int8, with an optional
// f32 bias.
//
// The layer either owns its storage (pack(): a transposed / converted copy made at startup) or
// borrows it (borrow(): tensors already in this layout, typically zero-copy views into a model
// file written by `orion convert`, whose mapping the tensors keep alive). Both are held as
// Tensors, so the two cases run the same code.
#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "model/weight_dtype.h"

namespace orion::engine {

class PackedLinear {
 public:
  PackedLinear() = default;
  // `w` is f32; `in_out` says it is stored [in, out] (GPT-2's Conv1D) rather than [out, in].
  // `bias` may be undefined. A copy: `w` and `bias` may be dropped afterwards.
  static PackedLinear pack(const Tensor& w, bool in_out, const Tensor& bias, model::WeightDType dtype,
                           int q8_block = model::kQ8Block);
  // No copy: `w` is [out, in] and contiguous, of dtype f32 (WeightDType::f32), f16 (f16) or i8
  // (q8); `scales` (q8 only, else undefined) is f32 [out, in / block], which sets the block
  // (32 or 64); `bias` is f32 [out] or undefined. The layer shares the tensors' storage.
  // Throws orion::Error for any other dtype, shape or block.
  static PackedLinear borrow(Tensor w, Tensor scales, Tensor bias, model::WeightDType dtype);

  // y = act(W x + b), over the pool's threads, with the kernels of `isa`.
  void apply(const float* x, float* y, ThreadPool& pool, exec::cpu::Isa isa = exec::cpu::best_isa(),
             exec::cpu::Activation act = exec::cpu::Activation::none) const;
  // Row r of W as floats (embedding lookups from a tied head).
  void row(std::int64_t r, float* out) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  model::WeightDType dtype() const { return dtype_; }
  int q8_block() const { return block_; }  // 0 unless q8
  // Bytes one apply() reads: the weights (and scales), not the bias.
  std::size_t weight_bytes() const;
  // Bytes of weights, scales and bias this layer allocated itself (0 when it borrows them).
  std::size_t owned_bytes() const { return owned_bytes_; }
  // The stored form: W [out, in], the q8 scales (undefined unless q8), the bias (may be undefined).
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
  int block_ = 0;
  Tensor w_;       // f32, f16 or i8 [rows, cols], contiguous
  Tensor scales_;  // f32 [rows, cols / block_]
  Tensor bias_;    // f32 [rows]
  std::size_t owned_bytes_ = 0;
};

}  // namespace orion::engine
