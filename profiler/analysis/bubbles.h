// Pipeline bubbles: for each step and each (rank, stage) the share of the step during which
// that stage computed nothing. The step window spans all ranks (a pipeline flush ends a step
// everywhere), so bubbles of different stages are comparable. Only steps whose work spans two
// stages or more have bubbles.
#pragma once

#include <cstdint>
#include <vector>

#include "core/parallel/schedule.h"
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

// Mean seconds of each compute instruction (F, B, Bi, W) over the trace's instruction spans, the
// durations a schedule's ideal bubble (ScheduleInfo::idealBubble) is evaluated at. An op that did
// not run takes the papers' ratio to the forward (B = 2F, Bi = W = B / 2); a trace without
// forwards gives the papers' unit durations.
StepDurations meanInstructionDurations(const TraceData& trace);

// The ideal bubble of `schedule` over `shape` at the trace's measured durations: what the view
// and `bench step` print beside the measured one.
double idealBubbleOf(const TraceData& trace, std::string_view schedule, const PipelineShape& shape);

}  // namespace parascope::profiler
