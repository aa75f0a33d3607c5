// Data movement: reshape, transpose, slice, concat, gather, broadcast_to, and scatter_add (the
// one that adds, f32 only). The others only copy elements, so they work on every compute dtype
// (f32, i32, i8, u8 and bool).
#include <algorithm>
#include <cstring>
#include <string>

#include "exec/cpu/kernels.h"
#include "exec/cpu/kernels/common.h"
#include "ir/type_rules.h"

namespace orion::exec::cpu::kernels {

namespace {

using detail::grain_for;

// out (contiguous, shape out_shape) = the elements of `in` at `base` + sum(index * strides).
void strided_copy(const KernelArgs& a, const Shape& strides, std::int64_t base) {
  if (a.output.numel() == 0) return;
  const detail::StridedIter<1> it(a.output.shape(), {strides}, {base});
  const std::int64_t inner = it.inner();
  const std::int64_t step = it.inner_strides()[0];
  detail::visit_storage(a.output.dtype(), [&]<class T>(T) {
    const T* in = a.inputs[0].data<T>();
    T* out = a.output.data<T>();
    a.pool.parallel_for(0, it.rows(), grain_for(inner), [&](std::int64_t lo, std::int64_t hi) {
      it.for_rows(lo, hi, [&](std::int64_t row, const std::array<std::int64_t, 1>& off) {
        const T* src = in + off[0];
        T* dst = out + row * inner;
        if (step == 1) {
          std::memcpy(dst, src, static_cast<std::size_t>(inner) * sizeof(T));
        } else {
          for (std::int64_t i = 0; i < inner; ++i) dst[i] = src[i * step];
        }
      });
    });
  });
}

std::size_t element_size(const Tensor& t) { return dtype_size(t.dtype()); }

}  // namespace

void reshape(const KernelArgs& a) {
  std::memcpy(a.output.raw(), a.inputs[0].raw(), a.output.nbytes());
}

void transpose(const KernelArgs& a) {
  const auto& perm = a.node.attr_ints("perm");
  const Shape in_strides = contiguous_strides(a.inputs[0].shape());
  Shape strides(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[static_cast<std::size_t>(perm[i])];
  strided_copy(a, strides, 0);
}

void slice(const KernelArgs& a) {
  const auto& begin = a.node.attr_ints("begin");
  const Shape strides = contiguous_strides(a.inputs[0].shape());
  std::int64_t base = 0;
  for (std::size_t d = 0; d < begin.size(); ++d) base += begin[d] * strides[d];
  strided_copy(a, strides, base);
}

void concat(const KernelArgs& a) {
  const Shape& os = a.output.shape();
  const auto axis = static_cast<std::size_t>(ir::normalize_axis(a.node.attr_int("axis"), a.output.rank()));
  const std::int64_t outer = detail::dims_product(os, 0, axis);
  const std::size_t inner_bytes =
      static_cast<std::size_t>(detail::dims_product(os, axis + 1, os.size())) * element_size(a.output);
  const std::size_t row_bytes = static_cast<std::size_t>(os[axis]) * inner_bytes;
  std::byte* out = a.output.raw();
  std::size_t at = 0;  // byte offset of the current input's part within an output row
  for (const Tensor& in : a.inputs) {
    const std::size_t chunk = static_cast<std::size_t>(in.shape()[axis]) * inner_bytes;
    const std::byte* src = in.raw();
    for (std::int64_t o = 0; o < outer; ++o) {
      const auto u = static_cast<std::size_t>(o);
      std::memcpy(out + u * row_bytes + at, src + u * chunk, chunk);
    }
    at += chunk;
  }
}

// Indices must lie in [0, size of the axis); negative indices are out of range (they do not
// count from the end). Every index is checked before anything is copied.
void gather(const KernelArgs& a) {
  const Tensor& table = a.inputs[0];
  const Tensor& indices = a.inputs[1];
  const Shape& ts = table.shape();
  const auto axis = static_cast<std::size_t>(ir::normalize_axis(a.node.attr_int("axis"), table.rank()));
  const std::int64_t outer = detail::dims_product(ts, 0, axis);
  const std::int64_t size = ts[axis];
  const std::size_t inner_bytes =
      static_cast<std::size_t>(detail::dims_product(ts, axis + 1, ts.size())) * element_size(table);
  const std::int32_t* idx = indices.data<std::int32_t>();
  const std::int64_t n = indices.numel();
  detail::check_indices(a.node, idx, n, size, "index", "axis " + std::to_string(axis) + " of the table " + shape_str(ts));
  const std::byte* src = table.raw();
  std::byte* out = a.output.raw();
  a.pool.parallel_for(0, outer * n, grain_for(static_cast<std::int64_t>(inner_bytes / 4) + 1),
                      [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t t = lo; t < hi; ++t) {
      const std::int64_t o = t / n;
      const std::int64_t row = o * size + idx[t % n];
      std::memcpy(out + static_cast<std::size_t>(t) * inner_bytes,
                  src + static_cast<std::size_t>(row) * inner_bytes, inner_bytes);
    }
  });
}

// The adjoint of gather: zeros, then every slice of the updates added to the row its index
// names. Threads split the inner axis, so that each element's additions happen in index order
// on one thread (the same sums on any pool).
void scatter_add(const KernelArgs& a) {
  const Tensor& upd = a.inputs[0];
  const Tensor& indices = a.inputs[1];
  const Shape& os = a.output.shape();
  const auto axis = static_cast<std::size_t>(ir::normalize_axis(a.node.attr_int("axis"), a.output.rank()));
  const std::int64_t outer = detail::dims_product(os, 0, axis);
  const std::int64_t size = os[axis];
  const std::int64_t inner = detail::dims_product(os, axis + 1, os.size());
  const std::int32_t* idx = indices.data<std::int32_t>();
  const std::int64_t n = indices.numel();
  detail::check_indices(a.node, idx, n, size, "index", "axis " + std::to_string(axis) + " of the result " + shape_str(os));
  const float* src = upd.data<float>();
  float* out = a.output.data<float>();
  const std::int64_t total = a.output.numel();
  a.pool.parallel_for(0, total, grain_for(1), [&](std::int64_t lo, std::int64_t hi) {
    std::fill(out + lo, out + hi, 0.0f);
  });
  const std::int64_t cols = outer * inner;  // (o, i) pairs: one column of additions each
  a.pool.parallel_for(0, cols, grain_for(n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo / inner; o * inner < hi; ++o) {
      const std::int64_t i0 = std::max(lo, o * inner) - o * inner;
      const std::int64_t i1 = std::min(hi, (o + 1) * inner) - o * inner;
      for (std::int64_t j = 0; j < n; ++j) {
        float* dst = out + (o * size + idx[j]) * inner;
        const float* s = src + (o * n + j) * inner;
        for (std::int64_t i = i0; i < i1; ++i) dst[i] += s[i];
      }
    }
  });
}

void broadcast_to(const KernelArgs& a) {
  strided_copy(a, detail::broadcast_strides(a.inputs[0].shape(), a.output.shape()), 0);
}

}  // namespace orion::exec::cpu::kernels
