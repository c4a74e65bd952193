// Selection statistics; see selection_stats.h.
#include "profiler/timeline/selection_stats.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "profiler/timeline/timeline_lod.h"

namespace parascope::profiler {

std::vector<NameStats> selectionStats(const TimelineIndex& index,
                                      const std::vector<std::uint32_t>& lanes, std::int64_t fromNs,
                                      std::int64_t toNs) {
  std::unordered_map<std::uint32_t, NameStats> byName;  // name id -> stats
  for (std::uint32_t laneNo : lanes) {
    for (const auto& level : index.lanes()[laneNo].levels) {
      auto first = std::lower_bound(level.begin(), level.end(), fromNs,
                                    [](const SpanRec& s, std::int64_t t) { return s.endNs < t; });
      for (auto it = first; it != level.end() && it->startNs <= toNs; ++it) {
        const std::int64_t d = std::min(it->endNs, toNs) - std::max(it->startNs, fromNs);
        NameStats& s = byName[it->nameCat >> 4];
        s.minNs = s.count == 0 ? d : std::min(s.minNs, d);
        s.maxNs = s.count == 0 ? d : std::max(s.maxNs, d);
        ++s.count;
        s.totalNs = saturatingAdd(s.totalNs, d);
      }
    }
  }
  std::vector<NameStats> out;
  std::int64_t all = 0;
  for (const auto& [id, s] : byName) all = saturatingAdd(all, s.totalNs);
  for (auto& [id, s] : byName) {
    s.name = index.name(id << 4);
    s.meanNs = static_cast<double>(s.totalNs) / static_cast<double>(s.count);
    s.share = all > 0 ? static_cast<double>(s.totalNs) / static_cast<double>(all) : 0;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const NameStats& a, const NameStats& b) {
    return a.totalNs != b.totalNs ? a.totalNs > b.totalNs : a.name < b.name;
  });
  return out;
}

std::string statsToCsv(const std::vector<NameStats>& stats) {
  std::string csv = "name,count,total_ns,mean_ns,min_ns,max_ns,share\n";
  for (const NameStats& s : stats) {
    std::string name = s.name;
    if (name.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      name = q + "\"";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, ",%lld,%lld,%.3f,%lld,%lld,%.6f\n",
                  static_cast<long long>(s.count), static_cast<long long>(s.totalNs), s.meanNs,
                  static_cast<long long>(s.minNs), static_cast<long long>(s.maxNs), s.share);
    csv += name + buf;
  }
  return csv;
}

}  // namespace parascope::profiler
