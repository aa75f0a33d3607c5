// conv: 2-D convolution on NCHW without bias; fp32 accumulation.
//
// A 1x1 convolution with unit strides, no padding and one group (the ANE's way of writing a
// linear layer on [1, C, 1, S]) is a matrix product, weight [Cout, Cin] @ x[n] [Cin, H*W], done
// one of two ways:
//
//  * by default, the library's sgemm (exec/cpu/gemm.h) when it is large enough to pay for the
//    library's threads (every linear layer of a model on ane-sim), else the matmul kernel;
//  * with KernelArgs::column_independent, one matrix-vector product per output position
//    (exec/cpu/gemv.h's gemv_f32_columns, which reads the weights once for all positions). The
//    value at a position then depends on the weights and that position's input column alone,
//    with arithmetic fixed by the ISA and the weights' shape, never by how many positions there
//    are: ane-sim relies on it to evaluate only the live columns of a program and get the same
//    bits (device/ane_live_columns.h). sgemm's order of additions changes with the product's
//    width (and its threads), so it cannot promise that; it is faster on 32 positions
//    (docs/PERFORMANCE.md, "Smaller measurements behind the code"), which is why it stays the
//    default.
//
// Everything else runs a direct loop, parallel over (batch, output channel) planes, with the
// innermost loop along an output row.
#include <algorithm>

#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/cpu/gemv.h"
#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"
#include "ir/verifier.h"

namespace orion::exec::cpu::kernels {

namespace {

struct ConvGeometry {
  std::int64_t n, cin, h, w, cout, kh, kw, oh, ow, groups;
  std::int64_t sh, sw, pt, pl, dh, dw;
};

// Multiply-adds from which sgemm wins over the portable kernel (a 768 x 768 layer on 32 tokens
// is 19M).
constexpr std::int64_t kGemmMacs = std::int64_t{1} << 20;

void conv_as_matmul(const KernelArgs& a, const ConvGeometry& g) {
  const std::int64_t hw = g.h * g.w;
  if (g.cout * g.cin * hw >= kGemmMacs) {
    const Tensor w = a.inputs[1].contiguous(), x = a.inputs[0].contiguous();
    set_gemm_threads(a.pool.size());
    for (std::int64_t b = 0; b < g.n; ++b)
      sgemm(Transpose::no, Transpose::no, g.cout, hw, g.cin, 1.0f, w.data<float>(), g.cin,
            x.data<float>() + b * g.cin * hw, hw, 0.0f, a.output.data<float>() + b * g.cout * hw, hw);
    return;
  }
  ir::Node mm;
  mm.op = ir::Op::matmul;
  mm.name = a.node.name;
  mm.attrs = ir::make_attrs(ir::Op::matmul, {});
  // weight [Cout, Cin] is broadcast over the batch of x [N, Cin, H*W].
  const Tensor inputs[] = {a.inputs[1].reshape({g.cout, g.cin}), a.inputs[0].reshape({g.n, g.cin, g.h * g.w})};
  Tensor out = a.output.reshape({g.n, g.cout, g.oh * g.ow});
  matmul(KernelArgs{mm, inputs, out, a.pool, a.column_independent});
}

// Per batch: x [Cin, H*W] transposed to positions x channels, one gemv per position, and the
// products [H*W, Cout] transposed back into the output [Cout, H*W].
void conv_pointwise(const KernelArgs& a, const ConvGeometry& g) {
  const std::int64_t hw = g.h * g.w;
  const Tensor w = a.inputs[1].contiguous(), x = a.inputs[0].contiguous();
  std::vector<float> xt(static_cast<std::size_t>(hw * g.cin)), yt(static_cast<std::size_t>(hw * g.cout));
  for (std::int64_t b = 0; b < g.n; ++b) {
    const float* xb = x.data<float>() + b * g.cin * hw;
    for (std::int64_t c = 0; c < g.cin; ++c)
      for (std::int64_t p = 0; p < hw; ++p) xt[static_cast<std::size_t>(p * g.cin + c)] = xb[c * hw + p];
    gemv_f32_columns(w.data<float>(), xt.data(), yt.data(), g.cout, g.cin, hw, a.pool);
    float* ob = a.output.data<float>() + b * g.cout * hw;
    for (std::int64_t c = 0; c < g.cout; ++c)
      for (std::int64_t p = 0; p < hw; ++p) ob[c * hw + p] = yt[static_cast<std::size_t>(p * g.cout + c)];
  }
}

void conv_direct(const KernelArgs& a, const ConvGeometry& g) {
  const float* x = a.inputs[0].data<float>();
  const float* w = a.inputs[1].data<float>();
  float* out = a.output.data<float>();
  const std::int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  const std::int64_t planes = g.n * g.cout;
  const std::int64_t work = g.oh * g.ow * cin_g * g.kh * g.kw;
  a.pool.parallel_for(0, planes, detail::grain_for(work), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t plane = lo; plane < hi; ++plane) {
      const std::int64_t b = plane / g.cout, co = plane % g.cout;
      const std::int64_t group = co / cout_g;
      float* o = out + plane * g.oh * g.ow;
      std::fill(o, o + g.oh * g.ow, 0.0f);
      for (std::int64_t ci = 0; ci < cin_g; ++ci) {
        const float* xc = x + (b * g.cin + group * cin_g + ci) * g.h * g.w;
        const float* wc = w + (co * cin_g + ci) * g.kh * g.kw;
        for (std::int64_t ki = 0; ki < g.kh; ++ki)
          for (std::int64_t kj = 0; kj < g.kw; ++kj) {
            const float wv = wc[ki * g.kw + kj];
            // Output columns whose input column lies inside the row: ox*sw - pl + kj*dw in [0, w).
            const std::int64_t off = kj * g.dw - g.pl;
            const std::int64_t ox0 = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
            const std::int64_t ox1 = std::min(g.ow, off >= g.w ? 0 : (g.w - 1 - off) / g.sw + 1);
            for (std::int64_t oy = 0; oy < g.oh; ++oy) {
              const std::int64_t iy = oy * g.sh - g.pt + ki * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              const float* xr = xc + iy * g.w;
              float* orow = o + oy * g.ow;
              for (std::int64_t ox = ox0; ox < ox1; ++ox) orow[ox] += wv * xr[ox * g.sw + off];
            }
          }
      }
    }
  });
}

}  // namespace

void conv(const KernelArgs& a) {
  const Shape& xs = a.inputs[0].shape();
  const Shape& ws = a.inputs[1].shape();
  const Shape& os = a.output.shape();
  const auto& st = a.node.attr_ints("strides");
  const auto& pd = a.node.attr_ints("pads");
  const auto& dl = a.node.attr_ints("dilations");
  const ConvGeometry g{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], os[2], os[3],
                       a.node.attr_int("groups"), st[0], st[1], pd[0], pd[2], dl[0], dl[1]};
  if (a.output.numel() == 0) return;
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.groups == 1 &&
                         std::all_of(pd.begin(), pd.end(), [](std::int64_t p) { return p == 0; });
  if (pointwise && a.column_independent) conv_pointwise(a, g);
  else if (pointwise) conv_as_matmul(a, g);
  else conv_direct(a, g);
}

}  // namespace orion::exec::cpu::kernels
