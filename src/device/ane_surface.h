#pragma once
// An ANE I/O surface as the device sees it: a flat byte buffer of a fixed allocation size
// (an IOSurface of width = bytes, height 1 on the hardware). The device reads and writes a
// [1, C, 1, S] tensor as C*S packed values of the I/O's dtype (fp16, or fp32 in a program that
// declares it) from the surface's start, with no row stride (ANE028); bytes past them are
// padding. Packing into fp16 clamps to its finite range (ANE032).
#include <cstddef>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace orion::device {

class AneSurface {
 public:
  explicit AneSurface(std::size_t bytes) : bytes_(bytes) {}  // zero-filled

  std::size_t size() const { return bytes_.size(); }
  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

// Writes `t` (any float dtype; its elements in row-major order, which for [1, C, 1, S] is
// channel-major) as fp16 at the start of `s`, each value clamped to [-65504, 65504] (NaN
// stays NaN); the bytes after it are zeroed. Throws orion::Error when it does not fit.
void pack_fp16(const Tensor& t, AneSurface& s);

// The first numel(shape) fp16 values of `s` as an f16 tensor of `shape` (a copy). Throws
// orion::Error when the surface is too small.
Tensor unpack_fp16(const AneSurface& s, const Shape& shape);

// `t` written at the start of `s` in `dtype`, the I/O's: f16 as pack_fp16 writes it, f32 as
// given (the program converts it to fp16 itself, so the host has no range to keep). Throws
// orion::Error for another dtype or when it does not fit.
void pack_io(const Tensor& t, DType dtype, AneSurface& s);

// The first numel(shape) values of `s` as a tensor of `dtype`, f16 or f32 (a copy). Throws
// orion::Error for another dtype or when the surface is too small.
Tensor unpack_io(const AneSurface& s, DType dtype, const Shape& shape);

}  // namespace orion::device
