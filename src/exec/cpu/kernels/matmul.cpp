// matmul: batched x @ y with broadcast batch dimensions and optional transposes of the last two
// axes; fp32 accumulation.
//
// Portable blocked GEMM (the GotoBLAS scheme): the output is cut into MC x NC tiles, one task
// each on the thread pool; for every KC-long slice of the inner dimension a task packs its rows
// of x into MR-row panels and its columns of y into NR-column panels (transposes are absorbed
// by the packing), and a register-blocked MR x NR micro-kernel, written so that the compiler
// vectorises it, multiplies panel by panel. Products with fewer than MR rows (decoding one
// token) skip the packing: every row streams y once.
//
// Products of at least kGemmMacs multiply-adds (a model's layers on a window, training's
// x^T dy and dy W^T) go to oneDNN's sgemm (exec/cpu/gemm.h) instead, one call per batch, with
// transposes passed as flags: the portable kernel reaches a fraction of its speed; with
// KernelArgs::column_independent, every product goes row by row (gemm_rows). For the
// portable kernel the order of the additions depends only on the shapes, never on the number
// of threads, so its results are the same bit for bit on any pool.
#include <algorithm>
#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"

namespace orion::exec::cpu::kernels {

namespace {

constexpr std::int64_t kMR = 4;     // micro-tile rows
constexpr std::int64_t kNR = 8;     // micro-tile columns
constexpr std::int64_t kKC = 256;   // inner-dimension slice: an NR panel of y is 8 KiB (L1)
constexpr std::int64_t kMC = 128;   // rows per task: the packed x block is 128 KiB (L2)
constexpr std::int64_t kNC = 256;   // columns per task
static_assert(kMC % kMR == 0 && kNC % kNR == 0, "tiles must hold whole micro-panels");
// Multiply-adds from which a product goes to sgemm (the conv kernel's threshold: a 768 x 768
// layer on 32 tokens is 19M).
constexpr std::int64_t kGemmMacs = std::int64_t{1} << 20;
// Multiply-adds below which a loop of tasks runs inline.
constexpr std::int64_t kParallelFlops = std::int64_t{1} << 17;

// A matrix operand: element (r, c) is at data[r * rs + c * cs].
struct Mat {
  const float* data;
  std::int64_t rs;
  std::int64_t cs;
};

// Packs the mc x kc block of x at `a` into MR-row panels: panel p holds rows p*MR.. as
// kc groups of MR values (zero past row mc).
void pack_x(Mat a, std::int64_t mc, std::int64_t kc, float* dst) {
  for (std::int64_t ir = 0; ir < mc; ir += kMR) {
    const std::int64_t m = std::min(kMR, mc - ir);
    float* panel = dst + ir * kc;
    const float* src = a.data + ir * a.rs;
    if (a.cs == 1) {
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = src[i * a.rs + k];
    } else {
      for (std::int64_t k = 0; k < kc; ++k)
        for (std::int64_t i = 0; i < m; ++i) panel[k * kMR + i] = src[k * a.cs + i * a.rs];
    }
    for (std::int64_t i = m; i < kMR; ++i)
      for (std::int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = 0.0f;
  }
}

// Packs the kc x nc block of y at `b` into NR-column panels: panel p holds columns p*NR.. as
// kc groups of NR values (zero past column nc).
void pack_y(Mat b, std::int64_t kc, std::int64_t nc, float* dst) {
  for (std::int64_t jr = 0; jr < nc; jr += kNR) {
    const std::int64_t n = std::min(kNR, nc - jr);
    float* panel = dst + jr * kc;
    const float* src = b.data + jr * b.cs;
    if (b.cs == 1) {
      for (std::int64_t k = 0; k < kc; ++k) {
        float* row = panel + k * kNR;
        for (std::int64_t j = 0; j < n; ++j) row[j] = src[k * b.rs + j];
        for (std::int64_t j = n; j < kNR; ++j) row[j] = 0.0f;
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = src[j * b.cs + k * b.rs];
      for (std::int64_t j = n; j < kNR; ++j)
        for (std::int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = 0.0f;
    }
  }
}

// c[0:m, 0:n] (+)= packed x panel (MR x kc) times packed y panel (kc x NR). The accumulator
// tile has constant bounds so that it lives in vector registers.
void micro_kernel(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc,
                  std::int64_t m, std::int64_t n, bool accumulate) {
  float acc[kMR][kNR] = {};
  for (std::int64_t k = 0; k < kc; ++k) {
    const float* av = ap + k * kMR;
    const float* bv = bp + k * kNR;
    for (std::int64_t i = 0; i < kMR; ++i)
      for (std::int64_t j = 0; j < kNR; ++j) acc[i][j] += av[i] * bv[j];
  }
  if (m == kMR && n == kNR) {
    for (std::int64_t i = 0; i < kMR; ++i) {
      float* row = c + i * ldc;
      if (accumulate)
        for (std::int64_t j = 0; j < kNR; ++j) row[j] += acc[i][j];
      else
        for (std::int64_t j = 0; j < kNR; ++j) row[j] = acc[i][j];
    }
    return;
  }
  for (std::int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (std::int64_t j = 0; j < n; ++j) row[j] = accumulate ? row[j] + acc[i][j] : acc[i][j];
  }
}

struct Problem {
  std::int64_t m, n, k;
  Mat x, y;  // strides of the logical (transposed) operands; data is each batch's base
  std::vector<std::int64_t> x_off, y_off;  // per output batch, element offsets of its operands
  const float* x_base;
  const float* y_base;
  float* out;
};

void gemm_blocked(const Problem& p, ThreadPool& pool) {
  const std::int64_t batches = static_cast<std::int64_t>(p.x_off.size());
  const std::int64_t mb = (p.m + kMC - 1) / kMC;
  const std::int64_t nb = (p.n + kNC - 1) / kNC;
  const std::int64_t tasks = batches * mb * nb;
  const std::int64_t task_flops = std::min(p.m, kMC) * std::min(p.n, kNC) * p.k;
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, task_flops));
  pool.parallel_for(0, tasks, grain, [&](std::int64_t lo, std::int64_t hi) {
    // Packing buffers sized for this product (small products do not clear large buffers).
    const std::int64_t kmax = std::min(kKC, p.k);
    std::vector<float> xbuf(static_cast<std::size_t>(std::min(kMC, (p.m + kMR - 1) / kMR * kMR) * kmax));
    std::vector<float> ybuf(static_cast<std::size_t>(std::min(kNC, (p.n + kNR - 1) / kNR * kNR) * kmax));
    for (std::int64_t t = lo; t < hi; ++t) {
      const std::int64_t b = t / (mb * nb);
      const std::int64_t i0 = (t / nb) % mb * kMC;
      const std::int64_t j0 = t % nb * kNC;
      const std::int64_t mc = std::min(kMC, p.m - i0);
      const std::int64_t nc = std::min(kNC, p.n - j0);
      const float* xb = p.x_base + p.x_off[static_cast<std::size_t>(b)];
      const float* yb = p.y_base + p.y_off[static_cast<std::size_t>(b)];
      float* cb = p.out + b * p.m * p.n + i0 * p.n + j0;
      for (std::int64_t k0 = 0; k0 < p.k; k0 += kKC) {
        const std::int64_t kc = std::min(kKC, p.k - k0);
        pack_x({xb + i0 * p.x.rs + k0 * p.x.cs, p.x.rs, p.x.cs}, mc, kc, xbuf.data());
        pack_y({yb + k0 * p.y.rs + j0 * p.y.cs, p.y.rs, p.y.cs}, kc, nc, ybuf.data());
        for (std::int64_t jr = 0; jr < nc; jr += kNR)
          for (std::int64_t ir = 0; ir < mc; ir += kMR)
            micro_kernel(kc, xbuf.data() + ir * kc, ybuf.data() + jr * kc, cb + ir * p.n + jr, p.n,
                         std::min(kMR, mc - ir), std::min(kNR, nc - jr), k0 > 0);
      }
    }
  });
}

// Few rows: each output row is computed directly, in column blocks, streaming y once per row.
void gemm_rows(const Problem& p, ThreadPool& pool) {
  const std::int64_t batches = static_cast<std::int64_t>(p.x_off.size());
  // Long blocks stream y in long runs; enough of them to keep every thread busy.
  const std::int64_t want = std::max<std::int64_t>(1, 4 * pool.size() / std::max<std::int64_t>(1, batches * p.m));
  const std::int64_t block = std::clamp<std::int64_t>((p.n + want - 1) / want, 256, 4096) / 8 * 8;
  const std::int64_t nb = (p.n + block - 1) / block;
  const std::int64_t tasks = batches * p.m * nb;
  const std::int64_t task_flops = std::min(p.n, block) * p.k;
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, task_flops));
  pool.parallel_for(0, tasks, grain, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<float> xrow(static_cast<std::size_t>(p.k));
    for (std::int64_t t = lo; t < hi; ++t) {
      const std::int64_t b = t / (p.m * nb);
      const std::int64_t i = (t / nb) % p.m;
      const std::int64_t j0 = t % nb * block;
      const std::int64_t len = std::min(block, p.n - j0);
      const float* xb = p.x_base + p.x_off[static_cast<std::size_t>(b)] + i * p.x.rs;
      const float* yb = p.y_base + p.y_off[static_cast<std::size_t>(b)];
      float* c = p.out + (b * p.m + i) * p.n + j0;
      for (std::int64_t k = 0; k < p.k; ++k) xrow[static_cast<std::size_t>(k)] = xb[k * p.x.cs];
      const float* xr = xrow.data();
      if (p.y.cs == 1) {
        // y row-major: c += x[k] * y[k, :], contiguous in the columns, four rows of y per
        // pass over c (added in order of k).
        for (std::int64_t j = 0; j < len; ++j) c[j] = 0.0f;
        std::int64_t k = 0;
        for (; k + 4 <= p.k; k += 4) {
          const float x0 = xr[k], x1 = xr[k + 1], x2 = xr[k + 2], x3 = xr[k + 3];
          const float* y0 = yb + k * p.y.rs + j0;
          const float* y1 = y0 + p.y.rs;
          const float* y2 = y1 + p.y.rs;
          const float* y3 = y2 + p.y.rs;
          for (std::int64_t j = 0; j < len; ++j) c[j] = c[j] + x0 * y0[j] + x1 * y1[j] + x2 * y2[j] + x3 * y3[j];
        }
        for (; k < p.k; ++k) {
          const float xv = xr[k];
          const float* yr = yb + k * p.y.rs + j0;
          for (std::int64_t j = 0; j < len; ++j) c[j] += xv * yr[j];
        }
      } else {
        // y transposed: c[j] is a dot product of contiguous vectors; eight partial sums let
        // it vectorise.
        for (std::int64_t j = 0; j < len; ++j) {
          const float* yc = yb + (j0 + j) * p.y.cs;
          float part[8] = {};
          std::int64_t k = 0;
          for (; k + 8 <= p.k; k += 8)
            for (std::int64_t u = 0; u < 8; ++u) part[u] += xr[k + u] * yc[k + u];
          float sum = 0.0f;
          for (std::int64_t u = 0; u < 8; ++u) sum += part[u];
          for (; k < p.k; ++k) sum += xr[k] * yc[k];
          c[j] = sum;
        }
      }
    }
  });
}

}  // namespace

void matmul(const KernelArgs& args) {
  const Tensor& tx = args.inputs[0];
  const Tensor& ty = args.inputs[1];
  const bool trans_x = args.node.attr_bool("transpose_x");
  const bool trans_y = args.node.attr_bool("transpose_y");
  const Shape& xs = tx.shape();
  const Shape& ys = ty.shape();
  const Shape& os = args.output.shape();
  const std::size_t rx = xs.size(), ro = os.size();
  float* out = args.output.data<float>();
  if (args.output.numel() == 0) return;

  Problem p;
  p.m = os[ro - 2];
  p.n = os[ro - 1];
  p.k = trans_x ? xs[rx - 2] : xs[rx - 1];
  p.out = out;
  if (p.k == 0) {
    std::fill(out, out + args.output.numel(), 0.0f);
    return;
  }
  p.x_base = tx.data<float>();
  p.y_base = ty.data<float>();
  // x is stored [m, k] ([k, m] transposed), y [k, n] ([n, k] transposed).
  p.x = trans_x ? Mat{nullptr, 1, p.m} : Mat{nullptr, p.k, 1};
  p.y = trans_y ? Mat{nullptr, 1, p.k} : Mat{nullptr, p.n, 1};

  // Batch offsets, with numpy broadcasting of the batch dimensions.
  const Shape ob(os.begin(), os.end() - 2);
  const Shape xbs = detail::broadcast_strides(Shape(xs.begin(), xs.end() - 2), ob);
  const Shape ybs = detail::broadcast_strides(Shape(ys.begin(), ys.end() - 2), ob);
  const std::int64_t batches = shape_numel(ob);
  p.x_off.resize(static_cast<std::size_t>(batches));
  p.y_off.resize(static_cast<std::size_t>(batches));
  for (std::int64_t b = 0; b < batches; ++b) {
    // Batch b's index in each broadcast dimension, last dimension fastest.
    std::int64_t rest = b, xo = 0, yo = 0;
    for (std::size_t d = ob.size(); d-- > 0;) {
      const std::int64_t i = rest % ob[d];
      rest /= ob[d];
      xo += i * xbs[d];
      yo += i * ybs[d];
    }
    p.x_off[static_cast<std::size_t>(b)] = xo * p.m * p.k;
    p.y_off[static_cast<std::size_t>(b)] = yo * p.k * p.n;
  }
  // One y for every batch and untransposed, consecutive x matrices: the batches are one tall
  // product (a layer applied to [batch, seq, c]).
  if (batches > 1 && !trans_x) {
    bool fold = true;
    for (std::int64_t b = 0; b < batches && fold; ++b)
      fold = p.y_off[static_cast<std::size_t>(b)] == p.y_off[0] &&
             p.x_off[static_cast<std::size_t>(b)] == b * p.m * p.k;
    if (fold) {
      p.m *= batches;
      p.x_off.assign(1, 0);
      p.y_off.assign(1, p.y_off[0]);
    }
  }
  if (args.column_independent) {
    // A program ane-sim may narrow to its live columns (device/ane_live_columns.h): row by
    // row, whose every element's bits depend on neither the number of rows nor of columns.
    gemm_rows(p, args.pool);
  } else if (p.m * p.n * p.k >= kGemmMacs) {
    set_gemm_threads(args.pool.size());
    const std::int64_t lda = trans_x ? p.m : p.k, ldb = trans_y ? p.k : p.n;
    for (std::size_t b = 0; b < p.x_off.size(); ++b)
      sgemm(trans_x ? Transpose::yes : Transpose::no, trans_y ? Transpose::yes : Transpose::no, p.m, p.n, p.k,
            1.0f, p.x_base + p.x_off[b], lda, p.y_base + p.y_off[b], ldb, 0.0f,
            out + static_cast<std::int64_t>(b) * p.m * p.n, p.n);
  } else if (p.m < kMR) {
    gemm_rows(p, args.pool);
  } else {
    gemm_blocked(p, args.pool);
  }
}

}  // namespace orion::exec::cpu::kernels
