// Stragglers: ranks that arrive late at collectives. The k-th collective of a name in a group
// on one rank is matched with the k-th of the same name and group on every other rank; a
// rank's lateness there is its start minus the earliest start (clocks must be aligned).
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct StragglerStats {
  std::int32_t rank = 0;
  std::int64_t collectives = 0;  // matched collectives this rank took part in
  std::int64_t timesLast = 0;    // how often it arrived last (strictly after another rank)
  std::int64_t meanLatenessNs = 0;
  std::int64_t maxLatenessNs = 0;
  std::int64_t totalLatenessNs = 0;
};

// Collectives are Communication spans with no peer. Ordered by mean lateness, latest first.
// Empty when fewer than two ranks share a collective.
std::vector<StragglerStats> computeStragglers(const TraceData& trace);

}  // namespace parascope::profiler
