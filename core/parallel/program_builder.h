// Building a rank's step program in two pure passes. ProgramBuilder appends the compute
// instructions a schedule orders together with the transfers they need: a forward of a stage
// whose predecessor lives on another rank is preceded by its RecvActivation and followed by its
// SendActivation; backwards likewise with gradients. Consecutive stages on the same rank (one
// rank, several chunks) hand over locally without a transfer. Used by every schedule.
// addDataParallelWork then places the data-parallel work into that program: gradient-bucket
// reductions after the last backward that writes each bucket, and ZeRO-3's gathers before the
// forwards that need them. No pipeline is the case p = 1 of the same two passes.
#pragma once

#include <vector>

#include "core/parallel/instruction.h"
#include "core/parallel/schedule.h"

namespace parascope {

// What a rank's data-parallel work looks like, from its gradient buckets and shard groups
// (core/train/flat_layout.h). Empty (no buckets): one replica without ZeRO, nothing to add.
struct DataParallelWork {
  Op reduce = Op::ReduceGradBucket;  // ReduceGradBucket (all-reduce) or ZeroScatter (ZeRO-2/3)
  // Per bucket, in the order the reducer issues them: the rank's chunks whose backward writes it.
  std::vector<std::vector<int>> bucketChunks;
  // Reduce after every micro-batch's backward rather than once per step (ZeRO-2/3 without a
  // pipeline, as DeepSpeed does: a full-size bucket lives only until its reduce-scatter). Needs
  // one chunk whose backward is one instruction per micro-batch.
  bool eachMicroBatch = false;
  // ZeRO-3, per chunk: the shard group its forward needs first (its first layer's). Empty without
  // ZeRO-3. Later layers' groups are prefetched one layer ahead as the forward runs.
  std::vector<int> forwardGroup;

  int buckets() const { return static_cast<int>(bucketChunks.size()); }
  bool empty() const { return bucketChunks.empty() && forwardGroup.empty(); }
};

// `program` (a schedule's, ending in its optimizer step) with `work` placed in it:
//  - each forward is preceded by a ZeroGather of its chunk's first group, ahead of the receive
//    of its input, so that the gather overlaps the wait;
//  - each bucket's reduction follows the last instruction writing it (B, Bi or W of a chunk in
//    bucketChunks, after that instruction's SendGrad so the neighbour is not kept waiting), no
//    earlier than the bucket before it; eachMicroBatch: every bucket after every backward.
// std::logic_error when eachMicroBatch is asked of a program it does not fit.
Program addDataParallelWork(const Program& program, const DataParallelWork& work);

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
