// Communication matrix and per-operation totals.
#include "profiler/analysis/comm_volume.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace parascope::profiler {

std::int64_t CommMatrix::at(std::int32_t src, std::int32_t dst) const {
  auto find = [&](std::int32_t r) {
    auto it = std::lower_bound(ranks.begin(), ranks.end(), r);
    return (it != ranks.end() && *it == r) ? static_cast<std::ptrdiff_t>(it - ranks.begin()) : -1;
  };
  auto i = find(src), j = find(dst);
  if (i < 0 || j < 0) return 0;
  return bytes[static_cast<std::size_t>(i) * ranks.size() + static_cast<std::size_t>(j)];
}

std::int64_t CommMatrix::total() const {
  return std::accumulate(bytes.begin(), bytes.end(), std::int64_t{0});
}

CommVolume computeCommVolume(const TraceData& trace) {
  std::set<std::int32_t> rankSet;
  std::map<std::string, OpTotal> ops;
  for (const Event& e : trace.events) {
    if (e.category != Category::Communication) continue;
    const bool sent = !(e.flags & trace::flag::kReceive);
    if (e.peer >= 0 && sent && e.bytes > 0) {
      rankSet.insert(e.rank);
      rankSet.insert(e.peer);
    }
    if (e.kind == EventKind::Span) {
      OpTotal& t = ops[e.name];
      t.name = e.name;
      ++t.count;
      if (sent) t.bytes += e.bytes;
      t.timeNs += e.durationNs();
    }
  }
  CommVolume v;
  v.matrix.ranks.assign(rankSet.begin(), rankSet.end());
  const std::size_t n = v.matrix.ranks.size();
  v.matrix.bytes.assign(n * n, 0);
  auto index = [&](std::int32_t r) {
    return static_cast<std::size_t>(
        std::lower_bound(v.matrix.ranks.begin(), v.matrix.ranks.end(), r) - v.matrix.ranks.begin());
  };
  for (const Event& e : trace.events) {
    if (e.category == Category::Communication && e.peer >= 0 && e.bytes > 0 &&
        !(e.flags & trace::flag::kReceive)) {
      v.matrix.bytes[index(e.rank) * n + index(e.peer)] += e.bytes;
    }
  }
  for (auto& [name, t] : ops) v.ops.push_back(std::move(t));
  return v;
}

}  // namespace parascope::profiler
