// The control of a running session: what the ranks do at each step boundary. Control calls
// (pause, resume, one step, stop) come from any thread and only change the wanted state; rank 0
// reads it at the boundary and hands one decision to every rank, so all ranks act on the same
// step. In-process ranks share this object and read the decision from memory (no traffic, so
// traces show only the training's communication). MPI ranks each have their own gate and rank 0
// broadcasts the decision; while paused it broadcasts a "wait" heartbeat every half second, so
// a long pause never trips a peer's communication timeout.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "core/comm/communicator.h"

namespace parascope {

class StepGate {
 public:
  // shared: one gate for all in-process ranks; otherwise this process's rank only (MPI).
  explicit StepGate(bool shared) : shared_(shared) {}

  void pause();
  void resume();
  // Lets exactly one more step run, then the session stays paused.
  void stepOnce();
  void stop();
  // A rank failed: ranks waiting at a boundary, now or later, throw with `reason`.
  void fail(const std::string& reason);

  // Called by every rank of `world` at boundary `boundary` (0 before the first step, counting
  // up by one); true: run the next step, false: stop. Blocks while the session is paused.
  bool next(Communicator& world, int boundary);
  // True while rank 0 is held at a boundary by a pause.
  bool paused() const;

 private:
  enum class Decision : int { Run = 1, Wait = 2, Stop = 3 };
  Decision decide(bool heartbeat);  // rank 0; heartbeat: give up waiting after half a second
  bool sharedNext(int rank, int boundary);

  const bool shared_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  bool held_ = false;  // rank 0 waits at a boundary because of the pause
  bool stopping_ = false;
  int credits_ = 0;  // single steps granted while paused
  std::string failure_;
  // In-process: the last boundary rank 0 decided and its decision. A rank at boundary b reads
  // Run if rank 0 has already moved past b (it only moves on after Run).
  int decided_ = -1;
  Decision decision_ = Decision::Run;
};

}  // namespace parascope
