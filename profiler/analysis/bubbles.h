// Pipeline bubbles: for each step and each (rank, stage) the share of the step during which
// that stage computed nothing. The step window spans all ranks (a pipeline flush ends a step
// everywhere), so bubbles of different stages are comparable.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct StageBubble {
  std::int32_t step = -1;
  std::int32_t rank = 0;
  std::int32_t stage = 0;
  std::int64_t windowNs = 0;  // the step, first start to last end over all ranks
  std::int64_t busyNs = 0;    // union of this stage's compute on this rank
  std::int64_t bubbleNs = 0;  // windowNs - busyNs
  double bubbleFraction = 0;
};

// Only events tagged with a stage count; ordered by step, stage, rank. Empty without stages.
std::vector<StageBubble> computeBubbles(const TraceData& trace);

}  // namespace parascope::profiler
