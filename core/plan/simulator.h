// The second executor of the step programs (the first is core/pipeline/step_executor.h): runs a
// planned strategy's step programs in virtual time with the cost model's durations and the step
// executor's rules.
//  - Every pipeline rank starts the step together; a send never blocks and its message arrives
//    a transfer later; a receive waits for its message (channels are FIFO per pair and kind).
//  - Bucket reductions and ZeRO gathers are issued to the rank's communication thread, which
//    runs them one at a time in issue order beside compute. ZeRO-3 gathers a chunk's parameters
//    for its forward (the ZeroGather before it) and again for its backward (issued as the B or
//    Bi starts); the gatherer prefetches layer by layer while the pass computes, so the pass
//    ends no earlier than its gather. A reduction round's collectives complete before the next
//    round's first gradient-writing pass, and before the optimizer step.
//  - The optimizer step starts when every pipeline rank has finished computing (the executor's
//    agreement on the step's span) and the rank's reductions are done.
//  - On a CPU every busy thread of every rank (compute and communication) shares the device's
//    cores: with more busy threads than cores each runs at cores / busy of its speed.
// Data- and tensor-parallel ranks of a pipeline rank run the same program on equal shares, so
// one pipeline rank stands for all of them (each counts as their number of busy threads).
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/cost_model.h"
#include "core/trace/event.h"

namespace parascope {

struct SimulatedSpan {
  double start = 0, end = 0;  // seconds from the step's start
};

struct SimulatedCollective {
  SimulatedSpan span;
  CommOp op = CommOp::AllReduce;
  double bytes = 0;
  int instruction = 0;  // index in the program of the instruction that issued it
};

struct SimulatedRank {
  std::vector<SimulatedSpan> instructions;  // per program instruction
  std::vector<SimulatedCollective> collectives;
  double busy = 0;    // seconds in compute instructions (F, B, Bi, W)
  double finish = 0;  // when it reached its optimizer step (finished computing)
  double end = 0;     // when its optimizer step ended
};

struct Simulation {
  std::vector<SimulatedRank> ranks;  // per pipeline rank
  double pipelineSeconds = 0;        // the latest finish: the executor's step span
  double stepSeconds = 0;            // the step as train reports it: last end + step overhead
  // The executor's idle fraction of a pipeline rank: (span - busy) / span.
  double idleFraction(int pipelineRank) const;
};

// std::logic_error if the programs deadlock (the validator has proven they do not).
Simulation simulateStep(const StrategyPlan& plan, const CostModel& costs);

// The simulation as ParaScope's trace: per world rank the same lanes, names, categories, stage,
// micro-batch and instruction ids the executor and the communicator record, `steps` steps back
// to back (numbered from 1, as a run's), times in ns from 0. Names are static strings.
// `ranks`: every world rank, or the first data- and tensor-parallel rank of each pipeline rank
// (the others run the same program on equal shares), which keeps a plan for thousands of GPUs
// to a few lanes.
enum class PredictedRanks { All, OnePerPipelineRank };
std::vector<trace::Event> predictedEvents(const StrategyPlan& plan, const Simulation& simulation,
                                          int steps = 1,
                                          PredictedRanks ranks = PredictedRanks::All);

}  // namespace parascope
