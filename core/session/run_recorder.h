// The session's hook for recording a run (train --trace). core/ defines it and profiler/
// implements it (profiler/session_trace.h), so the engine never links the profiler.
#pragma once

#include <string>

#include "core/comm/communicator.h"

namespace parascope {

class RunRecorder {
 public:
  virtual ~RunRecorder() = default;
  // Before any rank builds its model, so parameter memory is recorded. mpiWorld: this process's
  // MPI world (collective over it: clocks are aligned), or null for in-process ranks.
  virtual void begin(Communicator* mpiWorld, int worldSize) = 0;
  // After every rank of this process finished; rank: this process's rank under MPI, -1
  // in-process. Writes the file(s) and returns the path written.
  virtual std::string end(int rank) = 0;
};

}  // namespace parascope
