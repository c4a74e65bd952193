// Where a prediction is wrong: each instruction of a planned step, its predicted duration beside
// the one measured in a traced run of the same strategy (the median over the traced steps and
// over the data- and tensor-parallel ranks that run the same program), and the same summed per
// op. Measured spans are matched to the plan by (pipeline rank, instruction index), the ids the
// executor and the simulator share.
#pragma once

#include <string>
#include <vector>

#include "core/plan/simulator.h"

namespace parascope {

struct InstructionError {
  int pipelineRank = 0;
  int index = 0;  // in the rank's program
  Instruction instruction;
  double measuredSeconds = 0;  // median of the measured spans; 0 when none was measured
  int measuredSpans = 0;
  double predictedSeconds = 0;
  double error() const;  // (predicted - measured) / measured; 0 without a measurement
};

struct OpError {
  std::string op;  // opName
  int instructions = 0;
  double measuredSeconds = 0;  // summed over the instructions measured
  double predictedSeconds = 0;
  double error() const;
};

struct PredictionError {
  std::vector<InstructionError> instructions;  // every instruction of every pipeline rank
  std::vector<OpError> ops;                    // in Op order, those the programs hold
  double measuredStepSeconds = 0;              // median of the measured train_step spans
  double predictedStepSeconds = 0;
  double stepError() const;  // (predicted - measured) / measured; 0 without a measurement
};

// `measured`: events of a traced run of plan.config (any number of steps, every rank).
PredictionError comparePrediction(const StrategyPlan& plan, const Simulation& simulation,
                                  const std::vector<trace::Event>& measured);

}  // namespace parascope
