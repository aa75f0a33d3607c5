#pragma once
// A linear layer packed for decoding: W as [out, in] rows (so that each output is one
// contiguous dot product that the GEMV kernels stream once), in f32, f16 or per-block int8,
// with an optional f32 bias.
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"

namespace orion::model {

enum class WeightDType { f32, f16, q8 };

std::string_view weight_dtype_name(WeightDType t);
WeightDType weight_dtype_from_name(std::string_view name);  // throws orion::Error

inline constexpr int kQ8Block = 32;

class PackedLinear {
 public:
  PackedLinear() = default;
  // `w` is f32; `in_out` says it is stored [in, out] (GPT-2's Conv1D) rather than [out, in].
  // `bias` may be undefined.
  static PackedLinear pack(const Tensor& w, bool in_out, const Tensor& bias, WeightDType dtype);

  // y = W x + b, over the pool's threads, with the kernels of `isa`.
  void apply(const float* x, float* y, ThreadPool& pool, exec::cpu::Isa isa = exec::cpu::best_isa()) const;
  // Row r of W as floats (embedding lookups from a tied head).
  void row(std::int64_t r, float* out) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  WeightDType dtype() const { return dtype_; }
  // Bytes one apply() reads: the weights (and scales), not the bias.
  std::size_t weight_bytes() const;

  // For matrix-matrix products (batched prefill), which hand W to the BLAS as f32 [out, in]:
  // the f32 rows themselves (nullptr unless dtype() is f32; f16 and q8 go through row()), and
  // the bias (nullptr when there is none).
  const float* f32_data() const { return f32_.empty() ? nullptr : f32_.data(); }
  const float* bias_data() const { return bias_.empty() ? nullptr : bias_.data(); }

 private:
  WeightDType dtype_ = WeightDType::f32;
  std::int64_t rows_ = 0, cols_ = 0;
  std::vector<float> f32_;
  std::vector<std::uint16_t> f16_;
  std::vector<std::int8_t> q8_;
  std::vector<float> scales_;
  std::vector<float> bias_;
};

}  // namespace orion::model
