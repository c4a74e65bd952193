// Statistics of a box selection: per span name over a time range and a set of lanes, the
// count of spans that overlap the range and their time inside it. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

struct NameStats {
  std::string name;
  std::int64_t count = 0;
  std::int64_t totalNs = 0;  // clipped to the range
  std::int64_t minNs = 0, maxNs = 0;
  double meanNs = 0;
  // totalNs over every name's totalNs in the selection (as Nsight Systems' "Time (%)"): the
  // shares add up to 1 however many lanes are selected.
  double share = 0;
};

// Ordered by total time, longest first, then name. Spans with start <= toNs and end >= fromNs.
std::vector<NameStats> selectionStats(const TimelineIndex& index,
                                      const std::vector<std::uint32_t>& lanes, std::int64_t fromNs,
                                      std::int64_t toNs);

// CSV with a header row: name,count,total_ns,mean_ns,min_ns,max_ns,share.
std::string statsToCsv(const std::vector<NameStats>& stats);

}  // namespace parascope::profiler
