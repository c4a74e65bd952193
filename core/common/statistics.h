// Summaries of measured samples that several layers report (step times, kernel spans).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace parascope {

// The median of `v` (of an even count, the upper of the middle two: always a measured value);
// 0 for no samples.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  return *middle;
}

}  // namespace parascope
