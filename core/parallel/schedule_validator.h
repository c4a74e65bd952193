// Checks any set of per-rank programs against a pipeline shape: every (stage, micro-batch)
// forward and backward (or B and W) exactly once on the rank holding the stage, in dependency
// order; every send paired with the receive that expects it on the same FIFO channel; no
// deadlock under the executor's blocking model (sends never block, receives do); one optimizer
// step, last; peak held activations within what the schedule promises; given each rank's
// data-parallel work, every gradient bucket reduced after the backwards that write it and every
// ZeRO-3 forward after its gather. Reports problems as
// sentences naming the rank, the instruction index and what is wrong; it never throws on bad
// programs.
#pragma once

#include <string>
#include <vector>

#include "core/parallel/instruction.h"
#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"

namespace parascope {

struct ValidationReport {
  std::vector<std::string> problems;  // empty when the programs are valid
  std::vector<int> peakInFlight;      // per rank: forwards whose B (or full backward) is pending
  std::vector<int> peakHeld;          // per rank: forwards whose weight gradient is pending
  bool ok() const { return problems.empty(); }
  std::string summary() const;  // the problems, one per line
};

// `promise` is empty (no memory check) or holds one bound per rank; `work` is empty (data-parallel
// instructions checked for form only) or holds each rank's data-parallel work.
ValidationReport validatePrograms(const PipelineShape& shape, const std::vector<Program>& programs,
                                  const std::vector<ActivationBound>& promise = {},
                                  const std::vector<DataParallelWork>& work = {});

// Builds the schedule for the shape and validates it against the schedule's own promise.
ValidationReport validateSchedule(const ScheduleInfo& schedule, const PipelineShape& shape);

}  // namespace parascope
