// reduce_sum, reduce_mean and reduce_max over any set of axes, with or without keep_dims.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"
#include "ir/type_rules.h"

namespace orion::exec::cpu::kernels {

namespace {

using detail::grain_for;

// Sums accumulate in double, so that a long reduction keeps fp32 accuracy.
struct SumOp {
  using Acc = double;
  static Acc init() { return 0.0; }
  static void add(Acc& acc, float v) { acc += v; }
};

// The maximum propagates NaN, like numpy: once a NaN is seen it stays.
struct MaxOp {
  using Acc = float;
  static Acc init() { return -std::numeric_limits<float>::infinity(); }
  static void add(Acc& acc, float v) { acc = (v > acc || v != v) ? v : acc; }
};

// One group of adjacent input axes that are all reduced or all kept, merged into one axis.
struct Axis {
  std::int64_t size;
  std::int64_t stride;  // in input elements
};

// Calls fn(offset) for every combination of the axes, offset being the element offset.
template <class F> void for_each_offset(const std::vector<Axis>& axes, std::int64_t base, F&& fn) {
  std::vector<std::int64_t> idx(axes.size(), 0);
  std::int64_t off = base;
  for (;;) {
    fn(off);
    std::size_t d = axes.size();
    for (; d-- > 0;) {
      off += axes[d].stride;
      if (++idx[d] < axes[d].size) break;
      off -= axes[d].stride * axes[d].size;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

// Offset of the `i`-th combination of the axes (the last axis varying fastest).
std::int64_t offset_of(const std::vector<Axis>& axes, std::int64_t i) {
  std::int64_t off = 0;
  for (std::size_t d = axes.size(); d-- > 0;) {
    off += (i % axes[d].size) * axes[d].stride;
    i /= axes[d].size;
  }
  return off;
}

template <class R>
void reduce_with(const KernelArgs& a, bool mean) {
  const Tensor& tx = a.inputs[0];
  const Shape& s = tx.shape();
  const std::int64_t out_n = a.output.numel();
  float* out = a.output.data<float>();
  if (out_n == 0) return;
  const std::vector<int> axes = ir::reduce_axes(a.node, tx.rank());
  std::vector<bool> reduced(s.size(), false);
  std::int64_t count = 1;
  for (int d : axes) {
    reduced[static_cast<std::size_t>(d)] = true;
    count *= s[static_cast<std::size_t>(d)];
  }
  const auto finish = [&](typename R::Acc acc) {
    return mean ? static_cast<float>(acc / static_cast<double>(count)) : static_cast<float>(acc);
  };
  if (count == 0) {  // an empty reduction: sum 0, mean NaN (0 / 0), max -inf
    std::fill(out, out + out_n, finish(R::init()));
    return;
  }

  // Merge runs of adjacent axes with the same role, dropping axes of size 1.
  std::vector<Axis> groups;
  std::vector<bool> group_reduced;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) continue;
    if (!groups.empty() && group_reduced.back() == reduced[d]) {
      groups.back().size *= s[d];
    } else {
      groups.push_back({s[d], 0});
      group_reduced.push_back(reduced[d]);
    }
  }
  std::int64_t stride = 1;
  for (std::size_t g = groups.size(); g-- > 0;) {
    groups[g].stride = stride;
    stride *= groups[g].size;
  }
  std::vector<Axis> kept, red;
  for (std::size_t g = 0; g < groups.size(); ++g) (group_reduced[g] ? red : kept).push_back(groups[g]);
  const float* x = tx.data<float>();
  if (red.empty()) {  // every reduced axis has size 1
    for (std::int64_t i = 0; i < out_n; ++i) out[i] = finish(static_cast<typename R::Acc>(x[i]));
    return;
  }

  if (group_reduced.back()) {
    // The innermost group is reduced: every output reads contiguous runs of `len` elements.
    const std::int64_t len = red.back().size;
    red.pop_back();
    a.pool.parallel_for(0, out_n, grain_for(count), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t o = lo; o < hi; ++o) {
        typename R::Acc acc = R::init();
        for_each_offset(red, offset_of(kept, o), [&](std::int64_t off) {
          const float* run = x + off;
          for (std::int64_t i = 0; i < len; ++i) R::add(acc, run[i]);
        });
        out[o] = finish(acc);
      }
    });
    return;
  }

  // The innermost group is kept: outputs come in rows of `width` contiguous values, each row
  // the sum of contiguous input rows; the work goes across a row, in blocks.
  constexpr std::int64_t kBlock = 256;
  const std::int64_t width = kept.back().size;
  kept.pop_back();
  const std::int64_t blocks = (width + kBlock - 1) / kBlock;
  const std::int64_t rows = out_n / width;
  a.pool.parallel_for(0, rows * blocks, grain_for(count * std::min(width, kBlock)),
                      [&](std::int64_t lo, std::int64_t hi) {
    typename R::Acc acc[kBlock];
    for (std::int64_t t = lo; t < hi; ++t) {
      const std::int64_t row = t / blocks;
      const std::int64_t j0 = (t % blocks) * kBlock;
      const std::int64_t len = std::min(kBlock, width - j0);
      for (std::int64_t j = 0; j < len; ++j) acc[j] = R::init();
      for_each_offset(red, offset_of(kept, row) + j0, [&](std::int64_t off) {
        const float* run = x + off;
        for (std::int64_t j = 0; j < len; ++j) R::add(acc[j], run[j]);
      });
      float* o = out + row * width + j0;
      for (std::int64_t j = 0; j < len; ++j) o[j] = finish(acc[j]);
    }
  });
}

}  // namespace

void reduce(const KernelArgs& a) {
  switch (a.node.op) {
    case ir::Op::reduce_sum: return reduce_with<SumOp>(a, false);
    case ir::Op::reduce_mean: return reduce_with<SumOp>(a, true);
    case ir::Op::reduce_max: return reduce_with<MaxOp>(a, false);
    default: break;
  }
  throw Error(ir::describe(a.node) + ": not a reduce op");
}

}  // namespace orion::exec::cpu::kernels
