// Reductions every CPU level computes to the same bits (cpu_level.h): sixteen lanes of partial
// results, element j going to lane j mod 16, folded pairwise in a fixed order at the end. Loops
// over the lanes vectorise at any width (a single running sum would not, its order being fixed),
// and every width combines the same numbers in the same order. Internal to core/kernels.
#pragma once

namespace parascope::kernels {

inline constexpr int kLanes = 16;

template <typename T>
[[gnu::always_inline]] inline T foldSum(T (&acc)[kLanes]) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) acc[i] += acc[i + w];
  return acc[0];
}

template <typename T>
[[gnu::always_inline]] inline T foldMax(T (&top)[kLanes]) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) top[i] = top[i + w] > top[i] ? top[i + w] : top[i];
  return top[0];
}

// The sum of term(i) over i in [0, n), by lanes: term i goes to lane i mod 16.
template <typename T, typename Term>
[[gnu::always_inline]] inline T laneSum(long n, Term term) {
  T acc[kLanes] = {};
  long i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += term(i + l);
  for (int l = 0; i + l < n; ++l) acc[l] += term(i + l);
  return foldSum(acc);
}

// The largest of x[0 .. n), n >= 1, by lanes (compare and select, every lane starting at x[0]).
template <typename T>
[[gnu::always_inline]] inline T laneMax(const T* x, long n) {
  T top[kLanes];
  for (int l = 0; l < kLanes; ++l) top[l] = x[0];
  long i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) top[l] = x[i + l] > top[l] ? x[i + l] : top[l];
  for (int l = 0; i + l < n; ++l) top[l] = x[i + l] > top[l] ? x[i + l] : top[l];
  return foldMax(top);
}

}  // namespace parascope::kernels
