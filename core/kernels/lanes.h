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

}  // namespace parascope::kernels
