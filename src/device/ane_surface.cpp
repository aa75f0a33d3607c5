#include "device/ane_surface.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/half.h"
#include "core/zeroed_memory.h"

namespace orion::device {

void AneSurface::Free::operator()(std::byte* p) const { free_zeroed(p, bytes); }

AneSurface::AneSurface(std::size_t bytes)
    : host_(static_cast<std::byte*>(allocate_zeroed(bytes)), Free{bytes}), bytes_(host_.get(), bytes) {}

AneSurface::AneSurface(const AneSurface& other) : AneSurface(other.size()) {
  if (other.size() > 0) std::memcpy(bytes_.data(), other.bytes_.data(), other.size());
}

// Moving the pointer keeps the buffer, so bytes_ stays valid for host memory too.
AneSurface::AneSurface(AneSurface&& other) noexcept
    : host_(std::move(other.host_)), owner_(std::move(other.owner_)), bytes_(std::exchange(other.bytes_, {})) {}

AneSurface& AneSurface::operator=(AneSurface&& other) noexcept {
  if (this == &other) return *this;
  host_ = std::move(other.host_);
  owner_ = std::move(other.owner_);
  bytes_ = std::exchange(other.bytes_, {});
  return *this;
}

void pack_fp16(const Tensor& t, AneSurface& s) {
  const auto n = static_cast<std::size_t>(t.numel());
  if (n * 2 > s.size())
    throw Error("ane surface: " + shape_str(t.shape()) + " in fp16 is " + std::to_string(n * 2) +
                " bytes, more than the surface's " + std::to_string(s.size()));
  const Tensor f = t.contiguous().to(DType::f32);
  std::vector<float> v(f.span<float>().begin(), f.span<float>().end());
  for (float& x : v)
    if (!std::isnan(x)) x = std::clamp(x, -65504.0f, 65504.0f);
  std::vector<std::uint16_t> h(n);
  floats_to_halves(v, h);
  std::memcpy(s.bytes().data(), h.data(), n * 2);
  std::memset(s.bytes().data() + n * 2, 0, s.size() - n * 2);
}

Tensor unpack_fp16(const AneSurface& s, const Shape& shape) {
  Tensor t(DType::f16, shape);
  const auto bytes = static_cast<std::size_t>(t.numel()) * 2;
  if (bytes > s.size())
    throw Error("ane surface: " + shape_str(shape) + " in fp16 is " + std::to_string(bytes) +
                " bytes, more than the surface's " + std::to_string(s.size()));
  std::memcpy(t.raw(), s.bytes().data(), bytes);
  return t;
}

namespace {

void require_io_dtype(DType dtype) {
  if (dtype != DType::f16 && dtype != DType::f32)
    throw Error("ane surface: " + std::string(dtype_name(dtype)) + " I/O: a surface holds fp16 or fp32 values");
}

}  // namespace

void pack_io(const Tensor& t, DType dtype, AneSurface& s) {
  require_io_dtype(dtype);
  if (dtype == DType::f16) {
    pack_fp16(t, s);
    return;
  }
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * 4;
  if (bytes > s.size())
    throw Error("ane surface: " + shape_str(t.shape()) + " in fp32 is " + std::to_string(bytes) +
                " bytes, more than the surface's " + std::to_string(s.size()));
  const Tensor f = t.contiguous().to(DType::f32);
  std::memcpy(s.bytes().data(), f.raw(), bytes);
  std::memset(s.bytes().data() + bytes, 0, s.size() - bytes);
}

Tensor unpack_io(const AneSurface& s, DType dtype, const Shape& shape) {
  require_io_dtype(dtype);
  if (dtype == DType::f16) return unpack_fp16(s, shape);
  Tensor t(DType::f32, shape);
  if (t.nbytes() > s.size())
    throw Error("ane surface: " + shape_str(shape) + " in fp32 is " + std::to_string(t.nbytes()) +
                " bytes, more than the surface's " + std::to_string(s.size()));
  std::memcpy(t.raw(), s.bytes().data(), t.nbytes());
  return t;
}

}  // namespace orion::device
