#pragma once
// An ANE I/O surface as the device sees it: a flat byte buffer of a fixed allocation size
// (an IOSurface of width = bytes, height 1 on the hardware). The device reads and writes a
// [1, C, 1, S] tensor as C*S packed values of the I/O's dtype (fp16, or fp32 in a program that
// declares it) from the surface's start, with no row stride (ANE028); bytes past them are
// padding. Packing into fp16 clamps to its finite range (ANE032).
//
// The bytes are host memory, or memory a device owns (AneDevice::make_surface: on the `ane`
// device an IOSurface it binds without copying). Code that packs or reads a surface sees the
// same bytes() either way; only the device that made a surface looks at its owner.
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace orion::device {

// A device's handle on the memory of a surface it made: keeps that memory valid while the
// surface lives. A device knows its own by their type (dynamic_cast); nothing else reads it.
class AneSurfaceOwner {
 public:
  virtual ~AneSurfaceOwner() = default;
};

class AneSurface {
 public:
  // Host memory, zero-filled; its pages cost nothing until written (core/zeroed_memory.h), so
  // the padding of a surface sized by its kernel's largest input (ANE010) costs no memory.
  explicit AneSurface(std::size_t bytes);
  // `memory`, which `owner` keeps valid until it is destroyed with the surface (a device's).
  AneSurface(std::span<std::byte> memory, std::unique_ptr<AneSurfaceOwner> owner)
      : owner_(std::move(owner)), bytes_(memory) {}

  // A copy is host memory holding the same bytes, whoever owns the original's: two surfaces
  // never share memory. Moves keep the memory and its owner (a moved-from surface is empty).
  AneSurface(const AneSurface& other);
  AneSurface(AneSurface&& other) noexcept;
  AneSurface& operator=(AneSurface&& other) noexcept;
  AneSurface& operator=(const AneSurface& other) = delete;
  ~AneSurface() = default;

  std::size_t size() const { return bytes_.size(); }
  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  // The device's handle on the memory; null for host memory. Not const through a const
  // surface: a device binding an input changes its owner's state (an IOSurface's lock).
  AneSurfaceOwner* owner() const { return owner_.get(); }

 private:
  struct Free {
    Free() noexcept {}
    explicit Free(std::size_t n) noexcept : bytes(n) {}
    std::size_t bytes = 0;
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> host_;  // null when a device owns the memory
  std::unique_ptr<AneSurfaceOwner> owner_;
  std::span<std::byte> bytes_;  // host_, or the owner's memory
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
