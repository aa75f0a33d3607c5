#include "tensor_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace orion::cli {

TensorStats tensor_stats(const Tensor& t) {
  TensorStats s;
  const std::vector<float> v = t.to_floats();
  double sum = 0, sq = 0;
  std::int64_t n = 0;
  bool first = true;
  for (float f : v) {
    if (!std::isfinite(f)) {
      ++s.non_finite;
      continue;
    }
    sum += f;
    sq += static_cast<double>(f) * f;
    ++n;
    if (first || f < s.min) s.min = f;
    if (first || f > s.max) s.max = f;
    first = false;
  }
  if (n > 0) {
    s.mean = sum / static_cast<double>(n);
    s.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(n) - s.mean * s.mean));
  }
  return s;
}

std::string summarize(const Tensor& t, int first_values) {
  const TensorStats s = tensor_stats(t);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s%s  mean %.6g  std %.6g  min %.6g  max %.6g",
                std::string(dtype_name(t.dtype())).c_str(), shape_str(t.shape()).c_str(), s.mean,
                s.stddev, s.min, s.max);
  std::string out = buf;
  if (s.non_finite > 0) out += "  non-finite " + std::to_string(s.non_finite);
  const std::vector<float> v = t.to_floats();
  out += "\n  [";
  const std::size_t n = std::min(v.size(), static_cast<std::size_t>(first_values));
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", static_cast<double>(v[i]));
    out += buf;
  }
  if (v.size() > n) out += ", ...";
  return out + "]";
}

double relative_rms(const Tensor& want, const Tensor& got) {
  const std::vector<float> a = want.to_floats(), b = got.to_floats();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(a[i]) * a[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace orion::cli
