// The workbench's run recorder: it writes the run's Chrome trace file when the run ends, as
// profiler::RunTrace does, and meanwhile hands what the ranks recorded so far to the GUI. A
// thread of its own drains the tracer ten times a second and keeps each part twice: in the whole
// run (for the file) and in a pending batch the GUI thread swaps out under a mutex (take()).
// The ranks never wait for either thread: the tracer's record() takes no lock. An allocation
// failure on the drain thread ends the feed with a message (failure()), never the application.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/session/run_recorder.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/trace_data.h"
#include "profiler/tracer.h"

namespace parascope::profiler {

class LiveTrace final : public parascope::RunRecorder {
 public:
  explicit LiveTrace(std::string path) : path_(std::move(path)) {}
  ~LiveTrace() override;  // a run that never ended writes nothing

  void describe(const nlohmann::json& config) override { config_ = config.dump(); }
  void recordDevice(int cudaIndex) override;
  void begin(parascope::Communicator* mpiWorld, int worldSize) override;
  std::string end(int rank) override;

  // GUI thread: the events recorded since the last take (each part sorted by rank and start),
  // named from the returned trace's own strings. Empty before begin and after the last take.
  profiler::TraceData take();
  // The whole run as written to the file, once end() returned (null before): what the
  // workbench analyses and diffs without reading the file back.
  std::shared_ptr<const profiler::TraceData> trace();
  // Why the feed ended before the run did (an allocation failed on the drain thread); empty
  // while it runs. take() has nothing more to give then, and end() throws with the reason.
  std::string failure();

 private:
  void drainLoop();
  void stopDraining();
  void publish(const profiler::TraceData& part);

  std::string path_;
  std::string config_;  // the run's, written into the file
  std::unique_ptr<profiler::Tracer> tracer_;
  bool gpu_ = false;                       // recordDevice was called: collect with CUPTI
  std::unique_ptr<CuptiCollector> cupti_;  // flushed by the drain thread
  profiler::TraceData whole_;              // drain thread's until it is joined, then end()'s
  std::mutex mutex_;                       // guards pending_, stopping_, failure_ and ended_
  std::shared_ptr<const profiler::TraceData> ended_;
  std::condition_variable wake_;
  profiler::TraceData pending_;
  bool stopping_ = false;
  const char* failure_ = nullptr;  // a literal: set where allocating may fail
  std::thread drainer_;
};

}  // namespace parascope::profiler
