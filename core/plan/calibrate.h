// Fitting a hardware description (system.h) to measurements of this machine: compute
// instructions of traced runs (their measured spans against the cost model's features), the
// optimizer step, collectives timed by size, and whole steps for what the programs leave out.
// Pure functions over measurements; bench/plan.cpp takes the measurements.
#pragma once

#include <vector>

#include "core/plan/cost_model.h"
#include "core/trace/event.h"

namespace parascope {

// One traced run: its plan, its events (one or more traced steps) and its median step.
struct TracedRun {
  StrategyPlan plan;
  std::vector<trace::Event> events;
  double stepSeconds = 0;
};

// A collective timed on its own over `ranks` ranks of one link class.
struct CollectiveTiming {
  CommOp op = CommOp::AllReduce;
  double bytes = 0;  // message size (nccl-tests)
  int ranks = 2;
  double seconds = 0;
};

struct CalibrationFit {
  SystemDescription system;
  int computeSamples = 0;
  double computeError = 0;  // mean |predicted - measured| / measured over compute instructions
  int collectiveSamples = 0;
  double collectiveError = 0;
};

// `start` supplies what the measurements do not (cores, memory, other link classes, node size);
// the device's matrix-product rates, element-wise and optimizer bandwidths and instruction
// overhead, the in-process link and the step overhead are fitted. Runs whose ranks outnumber the
// cores, or that split layers over a tensor group, do not enter the compute fit (their spans
// include time-slicing or collectives). UserError when there is nothing to fit a parameter from.
CalibrationFit calibrate(const SystemDescription& start, const std::vector<TracedRun>& runs,
                         const std::vector<CollectiveTiming>& collectives);

// Least squares with every coefficient >= 0 (rows x columns, columns <= 6): the exact minimum
// over the subsets of free coefficients.
std::vector<double> nonNegativeLeastSquares(const std::vector<std::vector<double>>& rows,
                                            const std::vector<double>& targets);

}  // namespace parascope
