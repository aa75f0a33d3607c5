#pragma once
// Tensor: a dtype, a shape, strides (in elements) and a reference to 64-byte aligned storage.
// Copies are shallow (they share storage); views (reshape, permute, slice) share it too;
// clone() and contiguous() copy. Storage is either owned or borrowed from something that
// keeps it alive (an mmap'd file), which is how weights are used without copying.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"

namespace orion {

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"; a scalar is "[]"
Shape contiguous_strides(const Shape& shape);

inline constexpr std::size_t kTensorAlignment = 64;

class Buffer {
 public:
  // Zero-filled, aligned to kTensorAlignment.
  static std::shared_ptr<Buffer> allocate(std::size_t bytes);
  // Memory owned elsewhere; `owner` is kept alive as long as the buffer is.
  static std::shared_ptr<Buffer> borrow(std::byte* data, std::size_t bytes,
                                        std::shared_ptr<const void> owner);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Buffer(std::byte* data, std::size_t size, bool owned, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owned_(owned), owner_(std::move(owner)) {}
  std::byte* data_;
  std::size_t size_;
  bool owned_;
  std::shared_ptr<const void> owner_;
};

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled contiguous tensor.
  Tensor(DType dtype, Shape shape);
  // A contiguous view over `buffer` starting at `byte_offset`; the range must fit the buffer.
  static Tensor view_of(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                        std::size_t byte_offset);
  static Tensor from_floats(Shape shape, std::span<const float> values);   // f32
  static Tensor from_ints(Shape shape, std::span<const std::int32_t> values);  // i32
  static Tensor scalar(float value) { return from_floats({}, std::span<const float>(&value, 1)); }

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const;  // negative axes count from the end
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;

  // Typed access to the first element; T must match the dtype's storage (float for f32,
  // uint16_t for f16/bf16, int32_t for i32, int8_t for i8, uint8_t for u8/bool).
  template <class T> T* data() const { check_access(sizeof(T), storage_kind<T>()); return reinterpret_cast<T*>(raw()); }
  std::byte* raw() const { return buffer_->data() + offset_; }
  // All elements of a contiguous tensor as a span.
  template <class T> std::span<T> span() const {
    check_contiguous();
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  // Views (no copy).
  Tensor reshape(Shape shape) const;  // contiguous only; one dimension may be -1
  Tensor permute(std::span<const int> perm) const;
  Tensor slice(int axis, std::int64_t begin, std::int64_t end) const;
  // A contiguous tensor's bytes as `dtype` of `shape`, the same number of bytes (the words of a
  // packed format as the bytes an op reads).
  Tensor view_bytes(DType dtype, Shape shape) const;

  // Copies.
  Tensor clone() const;
  Tensor contiguous() const;     // *this when already contiguous
  Tensor to(DType dtype) const;  // converted copy (float <-> f16/bf16 rounds to nearest even)

  // Every element as float (for any dtype); for tests, printing and small tensors.
  std::vector<float> to_floats() const;

 private:
  enum class Kind : std::uint8_t { f32, u16, i32, i8, u8, u32 };
  template <class T> static constexpr Kind storage_kind();
  void check_access(std::size_t size, Kind kind) const;
  void check_contiguous() const;

  DType dtype_ = DType::f32;
  Shape shape_;
  Shape strides_;
  std::shared_ptr<Buffer> buffer_;
  std::size_t offset_ = 0;  // bytes
};

template <class T> constexpr Tensor::Kind Tensor::storage_kind() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, const float>) return Kind::f32;
  else if constexpr (std::is_same_v<std::remove_const_t<T>, std::uint16_t>) return Kind::u16;
  else if constexpr (std::is_same_v<std::remove_const_t<T>, std::int32_t>) return Kind::i32;
  else if constexpr (std::is_same_v<std::remove_const_t<T>, std::uint32_t>) return Kind::u32;
  else if constexpr (std::is_same_v<std::remove_const_t<T>, std::int8_t>) return Kind::i8;
  else {
    static_assert(std::is_same_v<std::remove_const_t<T>, std::uint8_t>, "unsupported element type");
    return Kind::u8;
  }
}

}  // namespace orion
