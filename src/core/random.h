#pragma once
// A seeded random number generator whose outputs are the same with every compiler, standard
// library and platform: xoshiro256** seeded through splitmix64, with its own conversions to
// floats and integers (std::*_distribution outputs differ between standard libraries).
#include <array>
#include <cstdint>
#include <span>

namespace orion {

// Everything a generator's future outputs depend on: xoshiro's four words and the Box-Muller
// value kept for the next normal(). Saved in checkpoints so that a resumed run draws the same
// numbers as one that never stopped.
struct RngState {
  std::array<std::uint64_t, 4> s{};
  double spare = 0.0;
  bool has_spare = false;

  bool operator==(const RngState&) const = default;
};

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);
  // A generator that continues exactly where the one that gave `state` was. Throws
  // orion::Error for the all-zero state, which xoshiro can never leave (no seed yields it).
  static Rng from_state(const RngState& state);

  RngState state() const;

  std::uint64_t next_u64();
  // Uniform in [0, 1), a multiple of 2^-24: every float of that form is equally likely.
  float uniform();
  // Uniform in [lo, hi) (lo when hi <= lo).
  float uniform(float lo, float hi);
  // Uniform in [0, 1), a multiple of 2^-53.
  double uniform_double();
  // Standard normal (Box-Muller in double; the second value of each pair is kept for the next
  // call). Uses std::log, std::sqrt, std::cos and std::sin, which platforms' libm may round
  // differently in the last bit of a double; that changes the float result only when it lies
  // within a double ulp of a rounding boundary between floats.
  float normal();
  float normal(float mean, float stddev);
  // Uniform in [0, n), without modulo bias. Throws orion::Error when n is 0.
  std::uint64_t below(std::uint64_t n);

  void fill_uniform(std::span<float> out, float lo, float hi);
  void fill_normal(std::span<float> out, float mean, float stddev);

 private:
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace orion
