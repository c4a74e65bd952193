// An ended run's segments predicted and set against what the run measured: per segment (a
// strategy and its steps of the run's trace) the plan, its simulation on a hardware
// description, the predicted trace of as many steps written to a file (a Compare source and
// what the timeline shows beside the run) and the instruction-by-instruction comparison with
// the segment's steps of the measured trace (core/plan/prediction_error.h). Plain C++, no Qt;
// planning and simulating a large strategy take tens of milliseconds and more, so the
// workbench runs this off the GUI thread.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/plan/prediction_error.h"
#include "core/plan/system.h"
#include "profiler/trace_data.h"

namespace parascope::ui {

struct SegmentToPredict {
  int segment = 0;       // its row in the Compare table
  std::string strategy;  // describeStrategy(config)
  TrainConfig config;
  int firstStep = 0, lastStep = 0;  // the run trace's step tags (from 1), inclusive
  std::string predictedTrace;       // where its predicted trace goes
};

struct PredictedSegment {
  SegmentToPredict segment;
  std::string failure;  // why it could not be predicted (then nothing else is set)
  PredictionError comparison;
};

// A whole step's relative error beyond which the workbench suggests calibrating this machine
// again: a calibration taken on a quiet machine predicts the default session's step within a
// few percent, one taken under a test run's load by +220%.
inline constexpr double kStaleDescriptionError = 0.5;

// The predicted segment whose whole step is the most mispredicted, when by more than `beyond`
// (0.5: by half its measured time); null otherwise. A description of this machine calibrated
// while other work held its cores mispredicts every step so.
const PredictedSegment* mostMispredicted(const std::vector<PredictedSegment>& predictions,
                                         double beyond);

// `measured`: the run's trace. A segment that cannot be planned or simulated gets its failure;
// an unwritable predicted trace throws.
std::vector<PredictedSegment> predictRun(const SystemDescription& system,
                                         const profiler::TraceData& measured,
                                         const std::vector<SegmentToPredict>& segments);

}  // namespace parascope::ui
