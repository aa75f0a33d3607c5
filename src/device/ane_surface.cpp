#include "device/ane_surface.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/half.h"

namespace orion::device {

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

}  // namespace orion::device
