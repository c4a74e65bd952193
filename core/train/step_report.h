// What one training step and one evaluation report: plain values the trainer fills, the session
// annotates and every front end (CLI printers, the workbench's models and charts) reads, without
// compiling against the engine (core/train/trainer.h).
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor/allocator.h"

namespace parascope {

struct StepReport {
  int step = 0;  // 1-based, after the update
  int totalSteps = 0;
  double loss = 0;  // mean over the step's targets, before the update
  double lr = 0;
  double gradNorm = 0;  // before clipping, of the unscaled gradients (inf or NaN on overflow)
  double seconds = 0;   // wall time of this step
  std::int64_t samples = 0;
  std::int64_t tokens = 0;  // targets processed (positions for text, images for classification)
  // This rank's time blocked on communication not hidden behind compute: gradient reduction
  // after backward, ZeRO's parameter all-gathers, tensor parallelism's collectives (this step's
  // evaluation excluded).
  double exposedCommSeconds = 0;
  // Pipeline programs (pipeline settings given): this rank's time in compute instructions, and
  // idle until the last pipeline rank finished computing; 0 without a pipeline.
  double pipelineBusySeconds = 0;
  double pipelineIdleSeconds = 0;
  // fp16: the loss scale this step's gradients were computed with (1 without loss scaling), and
  // whether the step was skipped because a gradient overflowed (parameters and optimizer state
  // unchanged, the scale lowered as fp16.hysteresis says).
  double lossScale = 1;
  bool skipped = false;
  // The optimizer's update of this rank's parameters or ZeRO shard (0 when skipped), and the
  // bytes the step read from and wrote to the rank's swap files (offload_optimizer and
  // offload_param nvme: the update's, and ZeRO-3's parameter reads before each layer pass).
  double optimizerSeconds = 0;
  std::int64_t swapBytes = 0;
  // Filled by the session (core/session/session.h): the reporting rank, its pipeline rank, and
  // its peak bytes by MemoryCategory during this step.
  int rank = 0;
  int pipelineRank = 0;
  std::array<std::int64_t, kMemoryCategoryCount> peakBytes{};
};

struct EvalReport {
  int step = 0;
  double loss = 0;      // mean per target, nats
  double accuracy = 0;  // fraction of targets predicted right
  std::int64_t targets = 0;
};

}  // namespace parascope
