#include "core/random.h"

#include <cmath>

#include "core/error.h"

// A fused multiply-add rounds once instead of twice; letting the compiler choose where to
// fuse would make results depend on the target and the compiler.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace orion {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(std::uint64_t seed) {
  // splitmix64 never yields four zero words in a row, the one state xoshiro cannot leave.
  std::uint64_t state = seed;
  for (std::uint64_t& word : s_) word = splitmix64(state);
}

Rng Rng::from_state(const RngState& state) {
  if (state.s == std::array<std::uint64_t, 4>{})
    throw Error("Rng state: all four words are zero, a state xoshiro256** cannot leave");
  Rng rng;
  for (std::size_t i = 0; i < 4; ++i) rng.s_[i] = state.s[i];
  rng.spare_ = state.spare;
  rng.has_spare_ = state.has_spare;
  return rng;
}

RngState Rng::state() const {
  RngState state;
  for (std::size_t i = 0; i < 4; ++i) state.s[i] = s_[i];
  state.spare = spare_;
  state.has_spare = has_spare_;
  return state;
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::uniform() {
  // The top bits of xoshiro256** are its best; 24 of them fill a float mantissa exactly.
  return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f;
}

double Rng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

float Rng::uniform(float lo, float hi) {
  if (!(hi > lo)) return lo;
  const double u = uniform_double();
  const auto v = static_cast<float>(static_cast<double>(lo) + (static_cast<double>(hi) - lo) * u);
  // Rounding to float can reach hi itself when u is close to 1.
  return v < hi ? v : std::nextafter(hi, lo);
}

float Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  // 1 - u lies in (0, 1], so the logarithm is finite.
  const double u1 = 1.0 - uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 6.283185307179586476925286766559 * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return static_cast<float>(r * std::cos(theta));
}

float Rng::normal(float mean, float stddev) { return mean + stddev * normal(); }

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw Error("Rng::below(0): empty range");
  // 2^64 mod n values at the bottom are the excess that would make x % n favour small
  // results; rejecting them leaves a multiple of n equally likely values.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t x = next_u64();
    if (x >= threshold) return x % n;
  }
}

void Rng::fill_uniform(std::span<float> out, float lo, float hi) {
  for (float& v : out) v = uniform(lo, hi);
}

void Rng::fill_normal(std::span<float> out, float mean, float stddev) {
  for (float& v : out) v = normal(mean, stddev);
}

}  // namespace orion
