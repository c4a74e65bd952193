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

// What every rank does at a boundary.
enum class GateAction : int { Run = 1, Stop = 3, Switch = 4, Save = 5 };

class StepGate {
 public:
  // shared: one gate for all in-process ranks; otherwise this process's rank only (MPI).
  explicit StepGate(bool shared) : shared_(shared) {}

  void pause();
  void resume();
  // Lets exactly one more step run, then the session stays paused.
  void stepOnce();
  void stop();
  // One-shot requests served at the next boundary, also while paused (the session stays paused
  // afterwards): a strategy switch, a checkpoint.
  void requestSwitch();
  void requestSave();
  // A rank failed: ranks waiting at a boundary, now or later, throw with `reason`.
  void fail(const std::string& reason);

  // Called by every rank of `world` at boundary `boundary` (0 before the first step, counting
  // up by one for every call, across a session's layouts); blocks while the session is paused.
  GateAction next(Communicator& world, int boundary);
  // True while rank 0 is held at a boundary by a pause.
  bool paused() const;

 private:
  enum class Decision : int { Run = 1, Wait = 2, Stop = 3, Switch = 4, Save = 5 };
  Decision decide(bool heartbeat);  // rank 0; heartbeat: give up waiting after half a second
  GateAction sharedNext(int rank, int boundary);

  const bool shared_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  bool held_ = false;  // rank 0 waits at a boundary because of the pause
  bool stopping_ = false;
  int credits_ = 0;  // single steps granted while paused
  bool switchWanted_ = false, saveWanted_ = false;
  std::string failure_;
  // In-process: the last boundary rank 0 decided, and the decisions of the last few (a rank reads
  // boundary b's after rank 0 may have decided b + 1: the steps between keep them close).
  static constexpr int kKept = 8;
  int decided_ = -1;
  Decision decisions_[kKept] = {Decision::Run, Decision::Run, Decision::Run, Decision::Run,
                                Decision::Run, Decision::Run, Decision::Run, Decision::Run};
};

}  // namespace parascope
