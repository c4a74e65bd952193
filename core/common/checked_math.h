// Integer arithmetic on values that come from files (trace timestamps and byte counts, tensor
// shapes, header sizes): saturating where a clamped figure is still meaningful (a total shown
// to a user), checked where a wrong size would corrupt memory. Never signed overflow.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace parascope {

inline std::int64_t saturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (!__builtin_add_overflow(a, b, &out)) return out;
  return b > 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}

inline std::int64_t saturatingSub(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b < 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}

// a * b, or nullopt when it does not fit.
inline std::optional<std::int64_t> checkedMul(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a - b as a double, for the distance between two values from a file (two timestamps of one
// trace may lie more than 2^63 ns apart): exact where the difference fits in an int64 and a
// double holds it, and never an overflow where it does not.
inline double differenceAsDouble(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (!__builtin_sub_overflow(a, b, &out)) return static_cast<double>(out);
  return static_cast<double>(a) - static_cast<double>(b);
}

// `x` rounded toward zero into an int64, saturating at its limits (NaN: 0): a product of a
// scale and a width (ns per pixel x pixels) may pass 2^63 on a trace that spans it.
inline std::int64_t saturatingFromDouble(double x) {
  if (!(x == x)) return 0;
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (x >= kLimit) return std::numeric_limits<std::int64_t>::max();
  if (x <= -kLimit) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(x);
}

}  // namespace parascope
