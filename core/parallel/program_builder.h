// Appends one rank's compute instructions together with the transfers they need: a forward of a
// stage whose predecessor lives on another rank is preceded by its RecvActivation and followed
// by its SendActivation; backwards likewise with gradients. Consecutive stages on the same rank
// (one rank, several chunks) hand over locally without a transfer. Used by every schedule.
#pragma once

#include "core/parallel/instruction.h"
#include "core/parallel/schedule.h"

namespace parascope {

class ProgramBuilder {
 public:
  ProgramBuilder(const PipelineShape& shape, int rank) : shape_(shape), rank_(rank) {}

  void forward(int chunk, int microBatch);
  void backward(int chunk, int microBatch);
  void backwardInput(int chunk, int microBatch);
  void backwardWeight(int chunk, int microBatch);
  Program finish();  // appends the optimizer step and hands the program over

 private:
  void backwardWith(Op op, int chunk, int microBatch);

  PipelineShape shape_;
  int rank_;
  Program program_;
};

}  // namespace parascope
