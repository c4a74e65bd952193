// Interval-set arithmetic for the analyses.
#include "profiler/analysis/intervals.h"

#include <algorithm>

#include "core/common/checked_math.h"

namespace parascope::profiler {

std::vector<Interval> unite(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

std::int64_t totalLength(const std::vector<Interval>& disjoint) {
  std::int64_t sum = 0;
  for (const Interval& i : disjoint) sum = saturatingAdd(sum, saturatingSub(i.end, i.start));
  return sum;
}

std::int64_t lengthOutside(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t covered = 0;
  std::size_t j = 0;
  for (const Interval& i : a) {
    while (j < b.size() && b[j].end <= i.start) ++j;
    for (std::size_t k = j; k < b.size() && b[k].start < i.end; ++k) {
      covered = saturatingAdd(
          covered, saturatingSub(std::min(i.end, b[k].end), std::max(i.start, b[k].start)));
    }
  }
  return saturatingSub(totalLength(a), covered);
}

std::vector<Interval> unionOf(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> all(a);
  all.insert(all.end(), b.begin(), b.end());
  return unite(std::move(all));
}

}  // namespace parascope::profiler
