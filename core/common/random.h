// Deterministic random numbers that depend only on a seed and a name or index, never on the
// order of calls across threads or on how a tensor is split: the same logical parameter or
// batch row gets the same values under every parallel layout.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace parascope {

// FNV-1a, for turning a parameter name into a stream id.
constexpr std::uint64_t hashName(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

constexpr std::uint64_t splitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Combines seeds/indices into one stream id.
constexpr std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a ^ (b * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);
  return splitMix64(s);
}

// xoshiro256** seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_) w = splitMix64(seed);
  }
  std::uint64_t next() {
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
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  // Uniform integer in [0, n), unbiased (rejection).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~0ull - (~0ull % n);
    std::uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % n;
  }
  // Standard normal (Box-Muller, one value per call for simplicity of replay).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace parascope
