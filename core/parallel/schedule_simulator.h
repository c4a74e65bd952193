// Runs a set of per-rank programs in virtual time under the executor's blocking model: a send
// never blocks (its message reaches the receiver `transfer` later), a receive blocks until the
// next message on its channel (sender, receiver, activation or gradient; FIFO) has arrived.
// Gives per-instruction start/end and per-rank busy/idle. This is the seed of the simulator in
// DESIGN.md ("One plan, two executors"); it knows nothing about costs beyond StepDurations.
#pragma once

#include <vector>

#include "core/parallel/instruction.h"
#include "core/parallel/schedule.h"

namespace parascope {

struct InstructionTiming {
  double start = 0;  // a receive starts when the rank reaches it and ends when its data is there
  double end = 0;
};

struct RankTimeline {
  std::vector<InstructionTiming> timings;  // one per instruction of the rank's program
  double busy = 0;    // time spent in instructions with a duration (compute, reduce, step)
  double finish = 0;  // end of the rank's last instruction
};

struct BlockedRank {
  int rank = 0;
  int index = 0;  // the receive the rank waits at forever
};

struct SimulationResult {
  std::vector<RankTimeline> ranks;
  double makespan = 0;               // the step ends when the last rank finishes
  std::vector<BlockedRank> blocked;  // non-empty when the programs deadlock
  bool deadlocked() const { return !blocked.empty(); }
  double idle(int rank) const { return makespan - ranks[static_cast<std::size_t>(rank)].busy; }
  double idleFraction(int rank) const { return makespan > 0 ? idle(rank) / makespan : 0; }
};

// Every send/recv's peer must name another of the programs.size() ranks (UserError otherwise);
// the validator checks this before it simulates.
SimulationResult simulatePrograms(const std::vector<Program>& programs,
                                  const StepDurations& durations = {});

}  // namespace parascope
