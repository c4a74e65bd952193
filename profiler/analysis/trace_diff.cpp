#include "profiler/analysis/trace_diff.h"

#include <limits>
#include <map>
#include <set>
#include <utility>

namespace parascope::profiler {

namespace {

using Key = std::pair<bool, std::string>;  // (communication, name)

struct PerKey {
  double ns = 0;
  std::set<std::int32_t> ranks;
};

// Summed span time per key, divided by the ranks that ran it and by the side's steps.
std::map<Key, PerKey> perRankStep(const DiffSide& side) {
  std::map<Key, PerKey> sums;
  std::set<std::int32_t> steps;
  for (const profiler::Event& e : side.trace->events) {
    if (e.kind != profiler::EventKind::Span) continue;
    if (side.firstStep >= 0 && (e.step < side.firstStep || e.step > side.lastStep)) continue;
    if (e.category == profiler::Category::Step && e.step >= 0) steps.insert(e.step);
    PerKey& k = sums[{e.category == profiler::Category::Communication, e.name}];
    k.ns += static_cast<double>(e.durationNs());
    k.ranks.insert(e.rank);
  }
  const auto perStep = static_cast<double>(std::max<std::size_t>(1, steps.size()));
  for (auto& [key, k] : sums) k.ns /= static_cast<double>(k.ranks.size()) * perStep;
  return sums;
}

}  // namespace

double DiffRow::ratio() const {
  return aNs > 0 ? bNs / aNs : std::numeric_limits<double>::quiet_NaN();
}

std::vector<DiffRow> diffTraces(const DiffSide& a, const DiffSide& b) {
  const std::map<Key, PerKey> sa = perRankStep(a), sb = perRankStep(b);
  std::map<Key, DiffRow> rows;
  const auto row = [&](const Key& key) -> DiffRow& {
    DiffRow& r = rows[key];
    r.communication = key.first;
    r.name = key.second;
    return r;
  };
  for (const auto& [key, k] : sa) {
    row(key).aNs = k.ns;
    row(key).aRanks = static_cast<int>(k.ranks.size());
  }
  for (const auto& [key, k] : sb) {
    row(key).bNs = k.ns;
    row(key).bRanks = static_cast<int>(k.ranks.size());
  }
  std::vector<DiffRow> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace parascope::profiler
