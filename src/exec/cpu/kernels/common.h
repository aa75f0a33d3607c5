#pragma once
// Helpers shared by the CPU kernels (internal to exec/cpu/kernels): grain sizes for the thread
// pool, dispatch on a dtype's storage type, and iteration over broadcast or strided operands.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace orion::exec::cpu::kernels::detail {

// Elements a parallel chunk should touch at least; a loop with less work than this runs inline
// on the calling thread, so small ops never pay for waking the pool.
inline constexpr std::int64_t kParallelWork = std::int64_t{1} << 15;

// The grain, in items, of a loop whose items touch `work_per_item` elements each.
inline std::int64_t grain_for(std::int64_t work_per_item) {
  return std::max<std::int64_t>(1, kParallelWork / std::max<std::int64_t>(1, work_per_item));
}

// Calls f(T{}) with T the element type a tensor of compute dtype `t` is stored as.
template <class F> decltype(auto) visit_storage(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::i32: return f(std::int32_t{});
    case DType::i8: return f(std::int8_t{});
    case DType::u8: case DType::boolean: return f(std::uint8_t{});
    case DType::f16: case DType::bf16: case DType::u32: break;
  }
  std::string msg = "cpu kernel: dtype ";  // appended, not "literal" + string (g++ 12 -Wrestrict)
  msg += dtype_name(t);
  msg += " is not a compute dtype";
  throw Error(msg);
}

// Throws orion::Error naming the node, the first index outside [0, size), its position and
// `range` (what it indexes, e.g. "axis 0 of the table [50257, 768]"), before a kernel touches
// memory with them. `what` names an index ("index", "target").
inline void check_indices(const ir::Node& node, const std::int32_t* idx, std::int64_t n,
                          std::int64_t size, std::string_view what, const std::string& range) {
  for (std::int64_t j = 0; j < n; ++j) {
    if (idx[j] >= 0 && idx[j] < size) continue;
    // Appended piece by piece: string + string trips a false -Wrestrict of g++ 12.
    std::string msg = ir::describe(node);
    msg += ": ";
    msg += what;
    msg += " ";
    msg += std::to_string(idx[j]);
    msg += " (at position ";
    msg += std::to_string(j);
    msg += ") is outside [0, ";
    msg += std::to_string(size);
    msg += "), ";
    msg += range;
    throw Error(msg);
  }
}

// Product of dims [begin, end) of a shape.
inline std::int64_t dims_product(const Shape& s, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t d = begin; d < end; ++d) n *= s[d];
  return n;
}

// Iteration over a contiguous output whose elements each read one element of N operands, given
// per output axis by a stride in elements (0 where the operand is broadcast). Axes of size 1
// are dropped and adjacent axes that are contiguous in every operand merged, so that the
// innermost loop is as long as possible. The output is walked as rows() rows of inner()
// elements; an operand's stride along a row is inner_strides()[k].
template <std::size_t N>
class StridedIter {
 public:
  // `out_shape` must have no zero dimension; strides[k][d] is operand k's stride along axis d.
  StridedIter(const Shape& out_shape, const std::array<Shape, N>& strides,
              const std::array<std::int64_t, N>& base = {}) : base_(base) {
    for (std::size_t d = 0; d < out_shape.size(); ++d) {
      if (out_shape[d] == 1) continue;
      std::array<std::int64_t, N> s{};
      for (std::size_t k = 0; k < N; ++k) s[k] = strides[k][d];
      if (!dims_.empty()) {
        bool merge = true;
        for (std::size_t k = 0; k < N; ++k)
          if (strides_.back()[k] != s[k] * out_shape[d]) merge = false;
        if (merge) {
          dims_.back() *= out_shape[d];
          strides_.back() = s;
          continue;
        }
      }
      dims_.push_back(out_shape[d]);
      strides_.push_back(s);
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      strides_.push_back({});
    }
    rows_ = 1;
    for (std::size_t d = 0; d + 1 < dims_.size(); ++d) rows_ *= dims_[d];
  }

  std::int64_t rows() const { return rows_; }
  std::int64_t inner() const { return dims_.back(); }
  const std::array<std::int64_t, N>& inner_strides() const { return strides_.back(); }

  // Calls fn(row, offsets) for every row in [lo, hi); offsets[k] is operand k's element offset
  // at the row's first element.
  template <class F> void for_rows(std::int64_t lo, std::int64_t hi, F&& fn) const {
    if (lo >= hi) return;
    const std::size_t outer = dims_.size() - 1;
    std::vector<std::int64_t> idx(outer, 0);
    std::array<std::int64_t, N> off = base_;
    std::int64_t rem = lo;
    for (std::size_t d = outer; d-- > 0;) {
      idx[d] = rem % dims_[d];
      rem /= dims_[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * strides_[d][k];
    }
    for (std::int64_t row = lo; row < hi; ++row) {
      fn(row, off);
      for (std::size_t d = outer; d-- > 0;) {
        for (std::size_t k = 0; k < N; ++k) off[k] += strides_[d][k];
        if (++idx[d] < dims_[d]) break;
        for (std::size_t k = 0; k < N; ++k) off[k] -= strides_[d][k] * dims_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  std::vector<std::int64_t> dims_;
  std::vector<std::array<std::int64_t, N>> strides_;
  std::array<std::int64_t, N> base_;
  std::int64_t rows_ = 1;
};

// The strides with which a contiguous operand of shape `in` is read when broadcast (numpy
// rules, shapes aligned at their last axis) to `out`: 0 along axes where it has size 1 or
// which it lacks.
inline Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape s(out.size(), 0);
  const Shape cs = contiguous_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) s[lead + d] = cs[d];
  return s;
}

}  // namespace orion::exec::cpu::kernels::detail
