// Pipeline schedules as pure functions: (pipeline ranks p, micro-batches m, chunks per rank v)
// -> one Program per pipeline rank. Each schedule is one file filling one ScheduleInfo
// (schedule_gpipe.cpp, schedule_1f1b.cpp, ...) and one line in the table in schedule.cpp. No
// execution and no timing here: the executor runs these programs, the simulator times them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/parallel/instruction.h"

namespace parascope {

struct PipelineShape {
  int stages = 1;        // p: pipeline ranks
  int microBatches = 1;  // m: micro-batches per step
  int chunks = 1;        // v: model chunks per rank (virtual stages; > 1 only when interleaved)

  int virtualStages() const { return stages * chunks; }
  int rankOf(int stage) const { return stage % stages; }
  int chunkOf(int stage) const { return stage / stages; }
  int stageOf(int rank, int chunk) const { return chunk * stages + rank; }
};

// Durations of one instruction of each kind, in any time unit. The defaults are the unit
// model of the papers: forward 1, backward 2, and for zero-bubble B 1 and W 1.
struct StepDurations {
  double forward = 1;
  double backward = 2;
  double backwardInput = 1;
  double backwardWeight = 1;
  double transfer = 0;      // from a send to its message being available at the receiver
  double dataParallel = 0;  // each bucket reduce / ZeRO gather / ZeRO scatter
  double optimizerStep = 0;
  double of(Op op) const;
};

// Peak activation units (one (stage, micro-batch) forward's saved tensors) a rank may hold.
// inFlight counts forwards whose input gradient (B or Bi) has not run; held counts forwards
// whose weight gradient (B or W) has not run. They differ only for zero-bubble schedules.
struct ActivationBound {
  int inFlight = 0;
  int held = 0;
};

struct ScheduleInfo {
  std::string_view name;         // "gpipe", "1f1b", "interleaved", "zb-h1"
  std::string_view description;  // one line for --help and reports
  // Throws UserError naming the sizes when this schedule cannot run the shape.
  void (*checkShape)(const PipelineShape& shape);
  Program (*buildRank)(const PipelineShape& shape, int rank);
  ActivationBound (*promisedPeak)(const PipelineShape& shape, int rank);
  // Idle fraction of every rank's step time with equal stages, per the schedule's paper; see
  // docs/schedules.md for the durations under which each formula is exact.
  double (*idealBubble)(const PipelineShape& shape, const StepDurations& durations);
};

// The largest of promisedPeak's bounds over the ranks: what the busiest rank holds.
ActivationBound busiestRankPeak(const ScheduleInfo& schedule, const PipelineShape& shape);

// For schedules that place one model chunk per rank: UserError unless v == 1.
void checkOneChunk(std::string_view schedule, const PipelineShape& shape);

// Each schedule file defines one of these.
const ScheduleInfo& gpipeSchedule();
const ScheduleInfo& oneFOneBSchedule();
const ScheduleInfo& interleavedSchedule();
const ScheduleInfo& zeroBubbleH1Schedule();

const std::vector<const ScheduleInfo*>& scheduleTable();
const ScheduleInfo& findSchedule(std::string_view name);  // UserError listing the known names

// Why the sizes are out of range for any schedule (p, m, v at least 1; p * v at most 4096
// virtual stages; m at most 65536), or empty when they are not.
std::string shapeProblem(const PipelineShape& shape);

// Checks the sizes (common limits, then the schedule's own rule) and builds every rank's program.
std::vector<Program> buildSchedule(const ScheduleInfo& schedule, const PipelineShape& shape);

}  // namespace parascope
