// The session's run recorder (core/session/run_recorder.h) over a TraceRecording: recording
// starts before the ranks build their models, and under MPI each process's clock is aligned
// to rank 0's first (a collective), so the per-rank files line up.
#pragma once

#include <memory>
#include <string>

#include "core/session/run_recorder.h"
#include "profiler/trace_recording.h"

namespace parascope::profiler {

class RunTrace final : public RunRecorder {
 public:
  explicit RunTrace(std::string path) : path_(std::move(path)) {}
  void describe(const nlohmann::json& config) override { config_ = config.dump(); }
  void recordDevice(int /*cudaIndex*/) override { gpu_ = true; }  // CUPTI's records name it
  void begin(Communicator* mpiWorld, int worldSize) override;
  std::string end(int rank) override;

 private:
  std::string path_;
  std::string config_;
  bool gpu_ = false;
  std::unique_ptr<TraceRecording> recording_;
};

}  // namespace parascope::profiler
