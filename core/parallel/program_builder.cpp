// Compute instructions wrapped in the transfers their stage boundaries need.
#include "core/parallel/program_builder.h"

#include <utility>

namespace parascope {

void ProgramBuilder::forward(int chunk, int microBatch) {
  const int stage = shape_.stageOf(rank_, chunk);
  const int previous = stage - 1;
  const int next = stage + 1;
  if (previous >= 0 && shape_.rankOf(previous) != rank_) {
    program_.push_back(
        transferOp(Op::RecvActivation, stage, chunk, microBatch, shape_.rankOf(previous)));
  }
  program_.push_back(forwardOp(stage, chunk, microBatch));
  if (next < shape_.virtualStages() && shape_.rankOf(next) != rank_) {
    program_.push_back(
        transferOp(Op::SendActivation, stage, chunk, microBatch, shape_.rankOf(next)));
  }
}

void ProgramBuilder::backwardWith(Op op, int chunk, int microBatch) {
  const int stage = shape_.stageOf(rank_, chunk);
  const int previous = stage - 1;
  const int next = stage + 1;
  if (next < shape_.virtualStages() && shape_.rankOf(next) != rank_) {
    program_.push_back(transferOp(Op::RecvGrad, stage, chunk, microBatch, shape_.rankOf(next)));
  }
  program_.push_back(op == Op::Backward ? backwardOp(stage, chunk, microBatch)
                                        : backwardInputOp(stage, chunk, microBatch));
  if (previous >= 0 && shape_.rankOf(previous) != rank_) {
    program_.push_back(transferOp(Op::SendGrad, stage, chunk, microBatch, shape_.rankOf(previous)));
  }
}

void ProgramBuilder::backward(int chunk, int microBatch) {
  backwardWith(Op::Backward, chunk, microBatch);
}

void ProgramBuilder::backwardInput(int chunk, int microBatch) {
  backwardWith(Op::BackwardInput, chunk, microBatch);
}

void ProgramBuilder::backwardWeight(int chunk, int microBatch) {
  program_.push_back(backwardWeightOp(shape_.stageOf(rank_, chunk), chunk, microBatch));
}

Program ProgramBuilder::finish() {
  program_.push_back(optimizerStepOp());
  return std::move(program_);
}

}  // namespace parascope
