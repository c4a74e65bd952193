// The schedule table, size checks shared by every schedule, and per-op durations.
#include "core/parallel/schedule.h"

#include <algorithm>
#include <string>

#include "core/common/error.h"

namespace parascope {

namespace {
// Stage numbers travel as int16 and micro-batches in 20 bits of an instruction id.
constexpr int kMaxVirtualStages = 4096;
constexpr int kMaxMicroBatches = 65536;
}  // namespace

double StepDurations::of(Op op) const {
  switch (op) {
    case Op::Forward: return forward;
    case Op::Backward: return backward;
    case Op::BackwardInput: return backwardInput;
    case Op::BackwardWeight: return backwardWeight;
    case Op::ReduceGradBucket:
    case Op::ZeroGather:
    case Op::ZeroScatter: return dataParallel;
    case Op::OptimizerStep: return optimizerStep;
    default: return 0;  // posting a send or completing a receive costs no compute time
  }
}

const std::vector<const ScheduleInfo*>& scheduleTable() {
  static const std::vector<const ScheduleInfo*> table = {
      &gpipeSchedule(), &oneFOneBSchedule(), &interleavedSchedule(), &zeroBubbleH1Schedule()};
  return table;
}

const ScheduleInfo& findSchedule(std::string_view name) {
  std::string known;
  for (const ScheduleInfo* schedule : scheduleTable()) {
    if (schedule->name == name) {
      return *schedule;
    }
    known += (known.empty() ? "" : ", ") + std::string(schedule->name);
  }
  throw UserError("unknown pipeline schedule '" + std::string(name) + "'; known: " + known);
}

std::string shapeProblem(const PipelineShape& shape) {
  if (shape.stages < 1) {
    return "pipeline stages p=" + std::to_string(shape.stages) + " must be at least 1";
  }
  if (shape.microBatches < 1 || shape.microBatches > kMaxMicroBatches) {
    return "micro-batches m=" + std::to_string(shape.microBatches) + " must be between 1 and " +
           std::to_string(kMaxMicroBatches);
  }
  if (shape.chunks < 1) {
    return "virtual chunks v=" + std::to_string(shape.chunks) + " must be at least 1";
  }
  if (static_cast<long long>(shape.stages) * shape.chunks > kMaxVirtualStages) {
    return "p=" + std::to_string(shape.stages) + " times v=" + std::to_string(shape.chunks) +
           " virtual stages exceed the limit of " + std::to_string(kMaxVirtualStages);
  }
  return {};
}

ActivationBound busiestRankPeak(const ScheduleInfo& schedule, const PipelineShape& shape) {
  ActivationBound peak;
  for (int rank = 0; rank < shape.stages; ++rank) {
    const ActivationBound b = schedule.promisedPeak(shape, rank);
    peak.inFlight = std::max(peak.inFlight, b.inFlight);
    peak.held = std::max(peak.held, b.held);
  }
  return peak;
}

void checkOneChunk(std::string_view schedule, const PipelineShape& shape) {
  if (shape.chunks != 1) {
    throw UserError("schedule " + std::string(schedule) +
                    " places one model chunk per rank, got v=" + std::to_string(shape.chunks) +
                    "; virtual chunks need 'interleaved'");
  }
}

std::vector<Program> buildSchedule(const ScheduleInfo& schedule, const PipelineShape& shape) {
  if (const std::string problem = shapeProblem(shape); !problem.empty()) {
    throw UserError("schedule " + std::string(schedule.name) + ": " + problem);
  }
  schedule.checkShape(shape);
  std::vector<Program> programs;
  programs.reserve(static_cast<std::size_t>(shape.stages));
  for (int rank = 0; rank < shape.stages; ++rank) {
    programs.push_back(schedule.buildRank(shape, rank));
  }
  return programs;
}

}  // namespace parascope
