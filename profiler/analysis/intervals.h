// Sets of time as sorted, disjoint [start, end) intervals: the arithmetic every timeline
// analysis shares (union of busy time, time in A but not B, clipping to a window).
#pragma once

#include <cstdint>
#include <vector>

namespace parascope::profiler {

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

// Sorts and merges overlapping or touching intervals; drops empty ones.
std::vector<Interval> unite(std::vector<Interval> v);
std::int64_t totalLength(const std::vector<Interval>& disjoint);
// Length of a \ b; both sorted and disjoint.
std::int64_t lengthOutside(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Union of a and b; both sorted and disjoint.
std::vector<Interval> unionOf(const std::vector<Interval>& a, const std::vector<Interval>& b);

inline bool clipTo(Interval& i, std::int64_t lo, std::int64_t hi) {
  if (i.start < lo) i.start = lo;
  if (i.end > hi) i.end = hi;
  return i.end > i.start;
}

}  // namespace parascope::profiler
