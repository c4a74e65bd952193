// RunTrace: clock alignment, then a TraceRecording for the run's lifetime.
#include "profiler/run_trace.h"

namespace parascope::profiler {

void RunTrace::begin(Communicator* mpiWorld, int worldSize) {
  ClockOffset offset;
  if (mpiWorld) offset = estimateClockOffset(*mpiWorld);
  recording_ =
      std::make_unique<TraceRecording>(path_, worldSize, gpu_ ? makeCuptiActivitySource() : nullptr,
                                       mpiWorld != nullptr ? mpiWorld->rank() : 0);
  recording_->setClockOffset(offset);
  recording_->setRunConfig(config_);
}

std::string RunTrace::end(int rank) {
  const std::string path = recording_->finish(rank);
  recording_.reset();
  return path;
}

}  // namespace parascope::profiler
