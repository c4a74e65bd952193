#include "profiler/analysis/trace_diff.h"

#include <limits>
#include <map>
#include <set>
#include <utility>

namespace parascope::profiler {

namespace {

using Key = std::pair<bool, std::string>;  // (communication, name)

// Summed span time per key, divided by the side's ranks and steps.
std::map<Key, double> perRankStep(const DiffSide& side) {
  std::map<Key, double> sums;
  std::set<std::int32_t> ranks, steps;
  for (const profiler::Event& e : side.trace->events) {
    if (e.kind != profiler::EventKind::Span) continue;
    if (side.firstStep >= 0 && (e.step < side.firstStep || e.step > side.lastStep)) continue;
    ranks.insert(e.rank);
    if (e.category == profiler::Category::Step && e.step >= 0) steps.insert(e.step);
    sums[{e.category == profiler::Category::Communication, e.name}] +=
        static_cast<double>(e.durationNs());
  }
  const double divisor = static_cast<double>(std::max<std::size_t>(1, ranks.size())) *
                         static_cast<double>(std::max<std::size_t>(1, steps.size()));
  for (auto& [key, ns] : sums) ns /= divisor;
  return sums;
}

}  // namespace

double DiffRow::ratio() const {
  return aNs > 0 ? bNs / aNs : std::numeric_limits<double>::quiet_NaN();
}

std::vector<DiffRow> diffTraces(const DiffSide& a, const DiffSide& b) {
  const std::map<Key, double> sa = perRankStep(a), sb = perRankStep(b);
  std::map<Key, DiffRow> rows;
  const auto row = [&](const Key& key) -> DiffRow& {
    DiffRow& r = rows[key];
    r.communication = key.first;
    r.name = key.second;
    return r;
  };
  for (const auto& [key, ns] : sa) row(key).aNs = ns;
  for (const auto& [key, ns] : sb) row(key).bNs = ns;
  std::vector<DiffRow> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace parascope::profiler
