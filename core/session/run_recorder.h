// The session's hook for recording a run (train --trace). core/ defines it and profiler/
// implements it (profiler/session_trace.h), so the engine never links the profiler.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/comm/communicator.h"

namespace parascope {

class RunRecorder {
 public:
  virtual ~RunRecorder() = default;
  // Before any rank builds its model, so parameter memory is recorded. mpiWorld: this process's
  // MPI world (collective over it: clocks are aligned), or null for in-process ranks.
  virtual void begin(Communicator* mpiWorld, int worldSize) = 0;
  // The run's starting config (its validated document), just before begin: a recorder that
  // writes files keeps it in them, so that the run can be compared with a prediction and
  // calibrated from later (core/plan). Nothing by default.
  virtual void describe(const nlohmann::json& config) { (void)config; }
  // The CUDA device this process's ranks compute on, just before begin, for runs on a GPU: a
  // recorder that can collects its activity (kernels, copies) linked to the spans that launched
  // it. Nothing by default.
  virtual void recordDevice(int cudaIndex) { (void)cudaIndex; }
  // After every rank of this process finished; rank: this process's rank under MPI, -1
  // in-process. Writes the file(s) and returns the path written.
  virtual std::string end(int rank) = 0;
};

}  // namespace parascope
