#include <array>

#include "core/error.h"
#include "exec/cpu/kernels.h"

namespace orion::exec::cpu {

namespace {

using ir::Op;

struct KernelTable {
  std::array<Kernel, ir::kOpCount> kernel{};
  // Whether an op has a kernel, beside the pointer: GCC cannot compare a function pointer with
  // nullptr at compile time under -fsanitize=null (make test-sanitize), so the check below reads this.
  std::array<bool, ir::kOpCount> has{};
};

constexpr KernelTable make_table() {
  KernelTable t;
  auto set = [&t](Op op, Kernel k) {
    t.kernel[static_cast<std::size_t>(op)] = k;
    t.has[static_cast<std::size_t>(op)] = true;
  };
  set(Op::matmul, kernels::matmul);
  set(Op::conv, kernels::conv);
  for (Op op : {Op::add, Op::sub, Op::mul, Op::div, Op::pow}) set(op, kernels::binary);
  for (Op op : {Op::neg, Op::exp, Op::log, Op::sqrt, Op::rsqrt, Op::tanh, Op::sigmoid, Op::relu,
                Op::gelu, Op::silu})
    set(op, kernels::unary);
  set(Op::softmax, kernels::softmax);
  set(Op::layer_norm, kernels::layer_norm);
  set(Op::rms_norm, kernels::rms_norm);
  for (Op op : {Op::reduce_sum, Op::reduce_mean, Op::reduce_max}) set(op, kernels::reduce);
  set(Op::reshape, kernels::reshape);
  set(Op::transpose, kernels::transpose);
  set(Op::slice, kernels::slice);
  set(Op::concat, kernels::concat);
  set(Op::gather, kernels::gather);
  set(Op::scatter_add, kernels::scatter_add);
  set(Op::broadcast_to, kernels::broadcast_to);
  set(Op::cast, kernels::cast);
  set(Op::clamp, kernels::clamp);
  set(Op::where, kernels::where);
  set(Op::softmax_cross_entropy, kernels::softmax_cross_entropy);
  set(Op::softmax_cross_entropy_grad, kernels::softmax_cross_entropy_grad);
  set(Op::dequantize, kernels::dequantize);
  set(Op::quantize, kernels::quantize);
  set(Op::dequantize_affine, kernels::dequantize_affine);
  return t;
}

constexpr auto kKernels = make_table();

// Every op but the sources has a kernel: adding an op to the table without one fails to build.
constexpr bool every_op_has_a_kernel() {
  for (int i = 0; i < ir::kOpCount; ++i) {
    const auto op = static_cast<Op>(i);
    const bool source = op == Op::input || op == Op::param || op == Op::constant;
    if (source == kKernels.has[static_cast<std::size_t>(i)]) return false;
  }
  return true;
}
static_assert(every_op_has_a_kernel(), "an op of the op table has no CPU kernel");

}  // namespace

Kernel kernel_for(ir::Op op) {
  const Kernel k = kKernels.kernel.at(static_cast<std::size_t>(op));
  if (!k) throw Error("op " + std::string(ir::op_info(op).name) + " has no CPU kernel");
  return k;
}

}  // namespace orion::exec::cpu
