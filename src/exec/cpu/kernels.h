#pragma once
// The CPU kernels: one per op of the op table, reached through one dispatch point.
// A kernel reads contiguous input tensors in compute storage (f32 for every float dtype, i32,
// and u8 for bool) and writes its output, already allocated with the node's shape. Rounding to
// the storage precision (fp16 in f16 mode) is the executor's job, not the kernel's.
#include <span>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ir/graph.h"

namespace orion::exec::cpu {

struct KernelArgs {
  const ir::Node& node;
  std::span<const Tensor> inputs;
  Tensor& output;
  ThreadPool& pool;
  // CpuOptions::column_independent: how pointwise convs (kernels/conv.cpp) and matmuls
  // (kernels/matmul.cpp: row by row) compute.
  bool column_independent = false;
};

using Kernel = void (*)(const KernelArgs& args);

// The kernel for an op; throws orion::Error for source ops, which have none.
Kernel kernel_for(ir::Op op);

// The dtype a value of `dtype` is stored in while the CPU executor runs: f32 for every float
// dtype (values are rounded to the dtype's precision), the dtype itself otherwise.
constexpr DType compute_dtype(DType dtype) { return is_float(dtype) ? DType::f32 : dtype; }

namespace kernels {
// Grouped by file under exec/cpu/kernels/.
void matmul(const KernelArgs& a);
void conv(const KernelArgs& a);
void binary(const KernelArgs& a);     // add sub mul div pow
void unary(const KernelArgs& a);      // neg exp log sqrt rsqrt tanh sigmoid relu gelu silu
void softmax(const KernelArgs& a);
void dequantize(const KernelArgs& a);  // kernels/quantize.cpp
void quantize(const KernelArgs& a);
void dequantize_affine(const KernelArgs& a);  // kernels/quantize.cpp
void layer_norm(const KernelArgs& a);
void rms_norm(const KernelArgs& a);
void reduce(const KernelArgs& a);     // reduce_sum reduce_mean reduce_max
void reshape(const KernelArgs& a);
void transpose(const KernelArgs& a);
void slice(const KernelArgs& a);
void concat(const KernelArgs& a);
void gather(const KernelArgs& a);
void scatter_add(const KernelArgs& a);
void broadcast_to(const KernelArgs& a);
void cast(const KernelArgs& a);
void clamp(const KernelArgs& a);
void where(const KernelArgs& a);
void softmax_cross_entropy(const KernelArgs& a);       // loss.cpp
void softmax_cross_entropy_grad(const KernelArgs& a);
}  // namespace kernels

}  // namespace orion::exec::cpu
