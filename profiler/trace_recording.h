// Records a whole run into a Chrome trace file (what `parascope-cli train --trace` does): a
// Tracer installed for the recording's lifetime, drained by a background thread so recording
// threads reuse warm buffers instead of mapping new memory mid-step, and one file written at the
// end (renamed into place only once complete). Recording never blocks the training threads;
// the background thread only copies what they have published.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "profiler/clock_sync.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/tracer.h"

namespace parascope::profiler {

class TraceRecording {
 public:
  // Starts recording; `worldSize` goes into the file's distributedInfo. With `gpu`, a GPU's
  // activity is recorded too, on `rank` (CuptiCollector), flushed by the drain thread; a
  // source that cannot start leaves the recording host-only with one line saying why.
  TraceRecording(std::string path, int worldSize, std::unique_ptr<ActivitySource> gpu = nullptr,
                 std::int32_t rank = 0);
  ~TraceRecording();  // stops; without finish() nothing is written (the run failed)
  TraceRecording(const TraceRecording&) = delete;
  TraceRecording& operator=(const TraceRecording&) = delete;

  // This process's offset to the aligned clock, applied to every event, and the residual
  // written into the file (TraceData::clockResidualNs).
  void setClockOffset(const ClockOffset& offset);
  // The run's config as JSON text, written into the file (TraceData::runConfig).
  void setRunConfig(std::string config);
  // Stops recording and writes the file: every rank's events to the path, or with rank >= 0
  // (one process per rank) this rank's to perRankPath(path, rank). Returns the path written.
  std::string finish(std::int32_t rank = -1);
  std::uint64_t dropped() const { return tracer_.dropped(); }

 private:
  void drainLoop();
  void stop();

  std::string path_;
  Tracer tracer_;
  std::unique_ptr<CuptiCollector> cupti_;  // after tracer_: stopped before it goes
  std::mutex mutex_;                       // guards data_ and stopping_
  std::condition_variable wake_;
  TraceData data_;
  bool stopping_ = false;
  std::thread drainer_;
};

}  // namespace parascope::profiler
