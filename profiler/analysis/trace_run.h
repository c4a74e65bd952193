// A recorded run's row of the Compare table from its trace alone, as the live session's step
// reports give it for a run in the workbench (core/session/run_metrics.h defines the measures):
// per step, the targets the run's config says a step trains and the step's wall time, first
// start to last end of its step spans over all ranks; per rank and step, its exposed
// communication (the breakdown's), its peak bytes per memory category within the step (the
// memory counters') and, on a pipeline, its stage's busy and idle time (the bubbles'); a rank
// that runs no steps (a parameter server) with its peak bytes over the whole run. Traces record
// no losses, so the row has no loss trend. Plain C++, no Qt.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/train/step_report.h"
#include "profiler/analysis/trace_analysis.h"

namespace parascope::profiler {

struct TraceRun {
  std::string strategy;  // in Megatron's terms, or the parameter servers' mode and ranks
  int ranks = 0;         // the ranks the trace holds
  double flopsPerToken = 0;
  std::vector<StepReport> steps;      // tokens, seconds and step per step, in step order
  std::vector<StepReport> rankSteps;  // per rank and step: exposed comm, peaks, pipeline time
};

// Empty when the trace is not a run this build recorded and can read (no config, a config it
// refuses, or no step spans).
std::optional<TraceRun> traceRun(const TraceAnalysis& analysis);

// The config a collective run recorded in its trace started with; none for a trace without
// one, a parameter-server run's, or one this build no longer reads.
std::optional<TrainConfig> recordedTrainConfig(const TraceData& trace);

}  // namespace parascope::profiler
