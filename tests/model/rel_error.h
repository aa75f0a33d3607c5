#pragma once
// How far the fast decoder's outputs are from a reference, normwise: max |a - ref| / max |ref|.
#include <algorithm>
#include <cmath>
#include <span>

namespace orion::model::testing {

inline double rel_error(std::span<const float> a, std::span<const float> ref) {
  double d = 0, r = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    d = std::max(d, static_cast<double>(std::abs(a[i] - ref[i])));
    r = std::max(r, static_cast<double>(std::abs(ref[i])));
  }
  return d / r;
}

}  // namespace orion::model::testing
