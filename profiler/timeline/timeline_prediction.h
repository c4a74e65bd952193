// A prediction beside the run it predicts, in one timeline: the predicted traces of a run's
// segments (core/plan's predictedEvents, one per segment, its steps counted from 1) join the
// measured trace with their ranks moved to kPredictedRankBase + N and labelled "rank N
// (predicted)", each predicted step placed at the start of the measured step it predicts and
// tagged with that step, so that rank N's prediction lies under rank N, step against step. An
// instruction span's counterpart is then the span of the same lane, step and instruction id on
// the other side. Plain C++, no Qt.
#pragma once

#include <vector>

#include "profiler/timeline/timeline_index.h"
#include "profiler/trace_data.h"

namespace parascope::profiler {

// The predicted trace of one segment, whose step 1 predicts the measured step `firstStep`.
struct PredictedPart {
  const profiler::TraceData* trace = nullptr;
  int firstStep = 0;
};

// `measured` with every part's events added beside it. A predicted step whose measured step has
// no step span (nothing to place it at) is left out.
profiler::TraceData withPredictionBeside(profiler::TraceData measured,
                                         const std::vector<PredictedPart>& parts);

// The other side's span of the instruction span `ref` (measured rank N and predicted rank N,
// same lane, step and instruction id); invalid when `ref` is no instruction or has none.
SpanRef counterpartSpan(const TimelineIndex& index, SpanRef ref);

}  // namespace parascope::profiler
