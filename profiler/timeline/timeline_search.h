// Search by span name, substring or regular expression: names are matched once each, then the
// spans that carry a matching name are collected in time order. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

struct SearchHit {
  std::int64_t startNs = 0;
  SpanRef ref;
};

// Throws std::regex_error for a bad regular expression. Hits sorted by start, then lane.
std::vector<SearchHit> searchSpans(const TimelineIndex& index, const std::string& pattern,
                                   bool regex);

}  // namespace parascope::profiler
