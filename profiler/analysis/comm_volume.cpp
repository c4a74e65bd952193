// Communication matrix and per-operation totals.
#include "profiler/analysis/comm_volume.h"

#include <set>

#include "core/common/checked_math.h"

namespace parascope::profiler {

std::int64_t CommMatrix::at(std::int32_t src, std::int32_t dst) const {
  const auto it = cells.find({src, dst});
  return it == cells.end() ? 0 : it->second;
}

std::int64_t CommMatrix::total() const {
  std::int64_t sum = 0;
  for (const auto& [pair, bytes] : cells) sum = saturatingAdd(sum, bytes);
  return sum;
}

CommVolume computeCommVolume(const TraceData& trace) {
  std::set<std::int32_t> rankSet;
  std::map<std::string, OpTotal> ops;
  CommVolume v;
  for (const Event& e : trace.events) {
    if (e.category != Category::Communication) continue;
    const bool sent = !(e.flags & trace::flag::kReceive);
    if (e.peer >= 0 && sent && e.bytes > 0) {
      rankSet.insert(e.rank);
      rankSet.insert(e.peer);
      std::int64_t& cell = v.matrix.cells[{e.rank, e.peer}];
      cell = saturatingAdd(cell, e.bytes);
    }
    if (e.kind == EventKind::Span) {
      OpTotal& t = ops[e.name];
      t.name = e.name;
      ++t.count;
      if (sent) t.bytes = saturatingAdd(t.bytes, e.bytes);
      t.timeNs = saturatingAdd(t.timeNs, saturatingSub(e.endNs, e.startNs));
    }
  }
  v.matrix.ranks.assign(rankSet.begin(), rankSet.end());
  for (auto& [name, t] : ops) v.ops.push_back(std::move(t));
  return v;
}

}  // namespace parascope::profiler
