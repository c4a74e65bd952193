// A text timeline of simulated programs, as drawn in docs/schedules.md: one row per rank (per
// rank and chunk when v > 1), one column per time unit. Forwards show their micro-batch's
// digit (mod 10), backwards and zero-bubble B a lowercase letter ('a' is micro-batch 0), W an
// uppercase one; '.' is idle and ' ' time spent on the rank's other chunks. For terminals and
// docs; the GUI draws its own timeline from the same SimulationResult.
#pragma once

#include <string>
#include <vector>

#include "core/parallel/instruction.h"
#include "core/parallel/schedule.h"
#include "core/parallel/schedule_simulator.h"

namespace parascope {

std::string renderTimeline(const PipelineShape& shape, const std::vector<Program>& programs,
                           const SimulationResult& run, double unit = 1);

}  // namespace parascope
