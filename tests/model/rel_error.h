#pragma once
// How far outputs are from a reference: normwise in the max norm (rel_error, the fast
// decoder's tests) and in the 2-norm (rel_l2, the ANE tests' "relative L2 error").
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

// ||got - want||_2 / ||want||_2
inline double rel_l2(std::span<const float> want, std::span<const float> got) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(want[i]) - got[i];
    err += d * d;
    norm += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(err / norm);
}

}  // namespace orion::model::testing
