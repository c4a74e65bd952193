// Memory timeline and peaks from Memory counters.
#include "profiler/analysis/memory_timeline.h"

#include <algorithm>
#include <map>
#include <utility>

namespace parascope::profiler {

std::vector<MemorySeries> computeMemoryTimeline(const TraceData& trace) {
  std::map<std::pair<std::int32_t, std::string>, MemorySeries> series;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Counter || e.category != Category::Memory) continue;
    MemorySeries& s = series[{e.rank, e.name}];
    s.points.push_back({e.startNs, e.bytes});
  }
  std::vector<MemorySeries> out;
  for (auto& [key, s] : series) {
    s.rank = key.first;
    s.name = key.second;
    std::stable_sort(
        s.points.begin(), s.points.end(),
        [](const MemoryPoint& a, const MemoryPoint& b) { return a.timeNs < b.timeNs; });
    s.peakBytes = s.points.front().bytes;
    s.peakAtNs = s.points.front().timeNs;
    for (const MemoryPoint& p : s.points) {
      if (p.bytes > s.peakBytes) {
        s.peakBytes = p.bytes;
        s.peakAtNs = p.timeNs;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace parascope::profiler
