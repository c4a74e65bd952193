// Statistics of a box selection: per span name over a time range and a set of lanes, the
// count of spans that overlap the range and their time inside it. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ui/timeline_index.h"

namespace parascope::ui {

struct NameStats {
  std::string name;
  std::int64_t count = 0;
  std::int64_t totalNs = 0;  // clipped to the range
  std::int64_t minNs = 0, maxNs = 0;
  double meanNs = 0;
  double share = 0;  // totalNs / range length (summed over lanes, so it may exceed 1)
};

// Ordered by total time, longest first, then name. Spans with start <= toNs and end >= fromNs.
std::vector<NameStats> selectionStats(const TimelineIndex& index,
                                      const std::vector<std::uint32_t>& lanes, std::int64_t fromNs,
                                      std::int64_t toNs);

// CSV with a header row: name,count,total_ns,mean_ns,min_ns,max_ns,share.
std::string statsToCsv(const std::vector<NameStats>& stats);

}  // namespace parascope::ui
