// Memory over time: every Memory counter (one per rank and memory category, e.g.
// "activation") as a step function of live bytes, with its peak and when it was first reached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct MemoryPoint {
  std::int64_t timeNs = 0;
  std::int64_t bytes = 0;
};

struct MemorySeries {
  std::int32_t rank = 0;
  std::string name;
  std::vector<MemoryPoint> points;  // time order
  std::int64_t peakBytes = 0;
  std::int64_t peakAtNs = 0;
};

// Ordered by rank, then name.
std::vector<MemorySeries> computeMemoryTimeline(const TraceData& trace);

}  // namespace parascope::profiler
