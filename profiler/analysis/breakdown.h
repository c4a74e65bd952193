// Where each rank's time went in each step: compute, communication, communication not hidden
// behind compute, other work (copies, data loading, file I/O) and idle, plus the overlap ratio.
// On a rank with GPU lanes only GPU work counts (the device is what is busy or idle).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/checked_math.h"
#include "profiler/trace_data.h"

namespace parascope::profiler {

struct StepBreakdown {
  std::int32_t rank = 0;
  std::int32_t step = -1;  // -1: the rank recorded no steps; the window is the whole trace
  std::int64_t windowStartNs = 0;
  std::int64_t windowEndNs = 0;
  std::int64_t computeNs = 0;
  std::int64_t communicationNs = 0;
  std::int64_t exposedCommunicationNs = 0;  // communication while no compute ran
  std::int64_t otherNs = 0;  // copies, memsets, data loading, file I/O, outside the above
  std::int64_t idleNs = 0;   // window minus the union of all three
  double overlapRatio = 0;   // hidden communication / communication, 0 if none
  bool gpu = false;

  std::int64_t windowNs() const { return saturatingSub(windowEndNs, windowStartNs); }
};

// One row per (rank, step), ordered by rank then step.
std::vector<StepBreakdown> computeBreakdown(const TraceData& trace);

}  // namespace parascope::profiler
