#pragma once
// Wall-clock timing for benchmarks and progress lines.
#include <algorithm>
#include <chrono>
#include <vector>

namespace orion {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double ms() const { return seconds() * 1e3; }

 private:
  std::chrono::steady_clock::time_point start_;
};

// The median of a non-empty sample (the mean of the two middle values for an even count).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return m;
}

// A sample's median and range, as the benchmarks report them (zeros for an empty sample).
struct Spread {
  double median = 0, min = 0, max = 0;
};

inline Spread spread(const std::vector<double>& v) {
  if (v.empty()) return {};
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {orion::median(v), *lo, *hi};
}

}  // namespace orion
