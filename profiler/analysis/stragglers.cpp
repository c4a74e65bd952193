// Straggler detection by matching collectives across ranks.
#include "profiler/analysis/stragglers.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "core/common/checked_math.h"

namespace parascope::profiler {

std::vector<StragglerStats> computeStragglers(const TraceData& trace) {
  // (group, name, k) -> arrivals (rank, start).
  using Key = std::tuple<std::int32_t, std::string, std::int64_t>;
  std::map<std::tuple<std::int32_t, std::int32_t, std::string>, std::int64_t> seen;
  std::map<Key, std::vector<std::pair<std::int32_t, std::int64_t>>> instances;
  std::vector<const Event*> collectives;
  for (const Event& e : trace.events) {
    // A parameter-server worker's pull or push (its own lanes) talks to every server, one at a
    // time: no collective, though it names no peer.
    const bool psRequest = e.lane == trace::lane::kPull || e.lane == trace::lane::kPush;
    if (e.kind == EventKind::Span && e.category == Category::Communication && e.peer < 0 &&
        !psRequest) {
      collectives.push_back(&e);
    }
  }
  std::stable_sort(collectives.begin(), collectives.end(),
                   [](const Event* a, const Event* b) { return a->startNs < b->startNs; });
  for (const Event* e : collectives) {
    std::int64_t k = seen[{e->rank, e->group, e->name}]++;
    instances[{e->group, e->name, k}].push_back({e->rank, e->startNs});
  }

  std::map<std::int32_t, StragglerStats> stats;
  for (const auto& [key, arrivals] : instances) {
    if (arrivals.size() < 2) continue;
    std::int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& [rank, t] : arrivals) {
      first = std::min(first, t);
      last = std::max(last, t);
    }
    for (const auto& [rank, t] : arrivals) {
      StragglerStats& s = stats[rank];
      s.rank = rank;
      ++s.collectives;
      const std::int64_t late = saturatingSub(t, first);
      s.totalLatenessNs = saturatingAdd(s.totalLatenessNs, late);
      s.maxLatenessNs = std::max(s.maxLatenessNs, late);
      if (t == last && last > first) ++s.timesLast;
    }
  }
  std::vector<StragglerStats> out;
  for (auto& [rank, s] : stats) {
    s.meanLatenessNs = s.totalLatenessNs / s.collectives;
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const StragglerStats& a, const StragglerStats& b) {
    return a.meanLatenessNs > b.meanLatenessNs;
  });
  return out;
}

}  // namespace parascope::profiler
