// GPipe (Huang et al. 2019): every micro-batch's forward, then every backward, in micro-batch
// order. Simple and bubble-equal to 1F1B, but each rank holds all m activations at the peak.

#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

void checkShape(const PipelineShape& shape) {
  checkOneChunk("gpipe", shape);
}

Program buildRank(const PipelineShape& shape, int rank) {
  ProgramBuilder out(shape, rank);
  for (int mb = 0; mb < shape.microBatches; ++mb) {
    out.forward(0, mb);
  }
  for (int mb = 0; mb < shape.microBatches; ++mb) {
    out.backward(0, mb);
  }
  return out.finish();
}

ActivationBound promisedPeak(const PipelineShape& shape, int) {
  return {shape.microBatches, shape.microBatches};
}

double idealBubble(const PipelineShape& shape, const StepDurations&) {
  const double p = shape.stages;
  return (p - 1) / (shape.microBatches + p - 1);
}

}  // namespace

const ScheduleInfo& gpipeSchedule() {
  static const ScheduleInfo info{"gpipe",      "all forwards, then all backwards (GPipe)",
                                 checkShape,   buildRank,
                                 promisedPeak, idealBubble};
  return info;
}

}  // namespace parascope
