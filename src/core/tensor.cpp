#include "core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>

#include "core/error.h"
#include "core/half.h"
#include "core/huge_pages.h"

namespace orion {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::shared_ptr<Buffer> Buffer::allocate(std::size_t bytes) {
  // Round up so that vector kernels may read whole registers at the end of a buffer.
  std::size_t padded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (padded == 0) padded = kTensorAlignment;
  void* p = allocate_large(padded, kTensorAlignment);
  std::memset(p, 0, padded);
  return std::shared_ptr<Buffer>(new Buffer(static_cast<std::byte*>(p), bytes, true, nullptr));
}

std::shared_ptr<Buffer> Buffer::borrow(std::byte* data, std::size_t bytes,
                                       std::shared_ptr<const void> owner) {
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, false, std::move(owner)));
}

Buffer::~Buffer() {
  if (owned_) free_large(data_);
}

static void check_shape(const Shape& shape) {
  // Shapes come from untrusted files: a product that overflows would make nbytes() small and
  // let a view pass the bounds check in view_of. 2^60 elements keep nbytes() within int64.
  // Zero dimensions do not excuse the others: strides are products of the later dimensions.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 60;
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw Error("tensor shape " + shape_str(shape) + " has a negative dimension");
    if (d == 0) continue;
    if (n > kMaxElements / d)
      throw Error("tensor shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  check_shape(shape_);
  strides_ = contiguous_strides(shape_);
  buffer_ = Buffer::allocate(nbytes());
}

Tensor Tensor::view_of(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                       std::size_t byte_offset) {
  check_shape(shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  if (!buffer || byte_offset > buffer->size() || t.nbytes() > buffer->size() - byte_offset)
    throw Error("tensor view " + shape_str(t.shape_) + " " + std::string(dtype_name(dtype)) +
                " at byte " + std::to_string(byte_offset) + " does not fit its buffer");
  t.buffer_ = std::move(buffer);
  t.offset_ = byte_offset;
  return t;
}

Tensor Tensor::from_floats(Shape shape, std::span<const float> values) {
  Tensor t(DType::f32, std::move(shape));
  if (static_cast<std::size_t>(t.numel()) != values.size())
    throw Error("from_floats: " + std::to_string(values.size()) + " values for shape " +
                shape_str(t.shape_));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size_bytes());
  return t;
}

Tensor Tensor::from_ints(Shape shape, std::span<const std::int32_t> values) {
  Tensor t(DType::i32, std::move(shape));
  if (static_cast<std::size_t>(t.numel()) != values.size())
    throw Error("from_ints: " + std::to_string(values.size()) + " values for shape " +
                shape_str(t.shape_));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size_bytes());
  return t;
}

std::int64_t Tensor::dim(int axis) const {
  int r = rank();
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw Error("axis " + std::to_string(axis) + " out of range for shape " + shape_str(shape_));
  return shape_[static_cast<std::size_t>(a)];
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void Tensor::check_access(std::size_t size, Kind kind) const {
  if (!buffer_) throw Error("access to an undefined tensor");
  Kind want = Kind::f32;
  switch (dtype_) {
    case DType::f32: want = Kind::f32; break;
    case DType::f16: case DType::bf16: want = Kind::u16; break;
    case DType::i32: want = Kind::i32; break;
    case DType::u32: want = Kind::u32; break;
    case DType::i8: want = Kind::i8; break;
    case DType::u8: case DType::boolean: want = Kind::u8; break;
  }
  if (kind != want || size != dtype_size(dtype_))
    throw Error("tensor of dtype " + std::string(dtype_name(dtype_)) +
                " accessed as another element type");
}

void Tensor::check_contiguous() const {
  if (!is_contiguous()) throw Error("tensor " + shape_str(shape_) + " is not contiguous");
}

Tensor Tensor::reshape(Shape shape) const {
  check_contiguous();
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw Error("reshape " + shape_str(shape) + ": more than one -1");
      infer = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0)
      throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape) +
                  ": -1 is ambiguous next to a zero dimension");
    shape[static_cast<std::size_t>(infer)] = numel() / known;
  }
  check_shape(shape);
  if (shape_numel(shape) != numel())
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::permute(std::span<const int> perm) const {
  if (static_cast<int>(perm.size()) != rank())
    throw Error("permute of " + shape_str(shape_) + ": permutation has " +
                std::to_string(perm.size()) + " axes");
  std::vector<bool> seen(perm.size(), false);
  Tensor t = *this;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    int p = perm[i];
    if (p < 0 || p >= rank() || seen[static_cast<std::size_t>(p)])
      throw Error("permute of " + shape_str(shape_) + ": not a permutation");
    seen[static_cast<std::size_t>(p)] = true;
    t.shape_[i] = shape_[static_cast<std::size_t>(p)];
    t.strides_[i] = strides_[static_cast<std::size_t>(p)];
  }
  return t;
}

Tensor Tensor::view_bytes(DType dtype, Shape shape) const {
  check_contiguous();
  check_shape(shape);
  if (static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype) != nbytes())
    throw Error("cannot view the " + std::to_string(nbytes()) + " bytes of " + shape_str(shape_) + " as " +
                std::string(dtype_name(dtype)) + shape_str(shape));
  Tensor t = *this;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::slice(int axis, std::int64_t begin, std::int64_t end) const {
  std::int64_t n = dim(axis);
  if (begin < 0 || end < begin || end > n)
    throw Error("slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") of axis " +
                std::to_string(axis) + " of " + shape_str(shape_) + " is out of range");
  std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + rank() : axis);
  Tensor t = *this;
  t.shape_[a] = end - begin;
  t.offset_ += static_cast<std::size_t>(begin * strides_[a]) * dtype_size(dtype_);
  return t;
}

namespace {

// A matrix of a strided view, rows x cols, into consecutive elements: in square tiles, so
// that a transposed matrix's reads stay within a few cache lines and pages at a time.
template <typename T>
void copy_tiles(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                std::int64_t col_stride) {
  constexpr std::int64_t kTile = 32;
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (std::int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::int64_t r1 = std::min(rows, r0 + kTile);
    for (std::int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const std::int64_t c1 = std::min(cols, c0 + kTile);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) d[r * cols + c] = s[r * row_stride + c * col_stride];
    }
  }
}

void copy_matrix(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                 std::int64_t col_stride, std::size_t es) {
  if (col_stride == 1) {
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + static_cast<std::size_t>(r * cols) * es, src + static_cast<std::size_t>(r * row_stride) * es,
                  static_cast<std::size_t>(cols) * es);
  } else if (es == 4) {
    copy_tiles<std::uint32_t>(dst, src, rows, cols, row_stride, col_stride);
  } else if (es == 2) {
    copy_tiles<std::uint16_t>(dst, src, rows, cols, row_stride, col_stride);
  } else if (es == 1) {
    copy_tiles<std::uint8_t>(dst, src, rows, cols, row_stride, col_stride);
  } else {  // no dtype has another size today; a new one is still copied whole
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        std::memcpy(dst + static_cast<std::size_t>(r * cols + c) * es,
                    src + static_cast<std::size_t>(r * row_stride + c * col_stride) * es, es);
  }
}

}  // namespace

Tensor Tensor::clone() const {
  Tensor out(dtype_, shape_);
  const std::size_t es = dtype_size(dtype_);
  if (is_contiguous()) {
    std::memcpy(out.raw(), raw(), nbytes());
    return out;
  }
  // A strided view (a transpose, a slice) is copied a matrix of its last two dimensions at a
  // time, each matrix's start advanced rather than recomputed from every index: compiling a
  // model copies every transposed weight this way.
  const std::int64_t n = numel();
  if (n == 0) return out;
  const std::size_t rank = shape_.size();
  const std::int64_t cols = shape_[rank - 1], col_stride = strides_[rank - 1];
  const std::int64_t rows = rank >= 2 ? shape_[rank - 2] : 1, row_stride = rank >= 2 ? strides_[rank - 2] : 0;
  const std::size_t outer = rank >= 2 ? rank - 2 : 0;
  std::vector<std::int64_t> idx(outer, 0);
  std::int64_t at = 0;  // offset of the current matrix's first element, in elements
  std::byte* dst = out.raw();
  for (std::int64_t m = 0; m < n / (rows * cols); ++m) {
    copy_matrix(dst, raw() + static_cast<std::size_t>(at) * es, rows, cols, row_stride, col_stride, es);
    dst += static_cast<std::size_t>(rows * cols) * es;
    for (std::size_t d = outer; d-- > 0;) {
      at += strides_[d];
      if (++idx[d] < shape_[d]) break;
      at -= strides_[d] * shape_[d];
      idx[d] = 0;
    }
  }
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

std::vector<float> Tensor::to_floats() const {
  Tensor c = contiguous();
  const std::size_t n = static_cast<std::size_t>(numel());
  std::vector<float> out(n);
  switch (dtype_) {
    case DType::f32: if (n) std::memcpy(out.data(), c.raw(), n * sizeof(float)); break;
    case DType::f16: halves_to_floats(c.span<std::uint16_t>(), out); break;
    case DType::bf16: bf16s_to_floats(c.span<std::uint16_t>(), out); break;
    case DType::i32: for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(c.data<std::int32_t>()[i]); break;
    case DType::u32: for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(c.data<std::uint32_t>()[i]); break;
    case DType::i8: for (std::size_t i = 0; i < n; ++i) out[i] = c.data<std::int8_t>()[i]; break;
    case DType::u8: case DType::boolean: for (std::size_t i = 0; i < n; ++i) out[i] = c.data<std::uint8_t>()[i]; break;
  }
  return out;
}

// Float to integer conversion of a value out of the target's range (or NaN) is undefined
// behaviour in C++; saturate instead (NaN becomes 0), truncating toward zero as a cast does.
template <class I> static I saturate_cast(float v) {
  if (std::isnan(v)) return 0;
  constexpr float lo = static_cast<float>(std::numeric_limits<I>::min());
  // max() + 1 is a power of two and so exact as a float, unlike max() for 32-bit types.
  constexpr float hi = static_cast<float>(std::numeric_limits<I>::max() / 2 + 1) * 2.0f;
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return clone();
  Tensor out(dtype, shape_);
  const std::vector<float> v = to_floats();
  const std::size_t n = v.size();
  switch (dtype) {
    case DType::f32: if (n) std::memcpy(out.raw(), v.data(), n * sizeof(float)); break;
    case DType::f16: floats_to_halves(v, out.span<std::uint16_t>()); break;
    case DType::bf16: floats_to_bf16s(v, out.span<std::uint16_t>()); break;
    case DType::i32: for (std::size_t i = 0; i < n; ++i) out.data<std::int32_t>()[i] = saturate_cast<std::int32_t>(v[i]); break;
    case DType::u32: for (std::size_t i = 0; i < n; ++i) out.data<std::uint32_t>()[i] = saturate_cast<std::uint32_t>(v[i]); break;
    case DType::i8: for (std::size_t i = 0; i < n; ++i) out.data<std::int8_t>()[i] = saturate_cast<std::int8_t>(v[i]); break;
    case DType::u8: for (std::size_t i = 0; i < n; ++i) out.data<std::uint8_t>()[i] = saturate_cast<std::uint8_t>(v[i]); break;
    case DType::boolean: for (std::size_t i = 0; i < n; ++i) out.data<std::uint8_t>()[i] = v[i] != 0.0f; break;
  }
  return out;
}

}  // namespace orion
