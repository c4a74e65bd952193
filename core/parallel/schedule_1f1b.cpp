// 1F1B with a flush (PipeDream-flush, Narayanan et al. 2021; Megatron's default): rank r runs
// min(p - r - 1, m) warm-up forwards, then alternates one forward and one backward, then drains
// the remaining backwards. Same bubble as GPipe, but at most p - r activations held.
#include <algorithm>

#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

void checkShape(const PipelineShape& shape) {
  checkOneChunk("1f1b", shape);
}

Program buildRank(const PipelineShape& shape, int rank) {
  ProgramBuilder out(shape, rank);
  const int m = shape.microBatches;
  const int warmup = std::min(shape.stages - rank - 1, m);
  const int steady = m - warmup;
  for (int mb = 0; mb < warmup; ++mb) {
    out.forward(0, mb);
  }
  for (int i = 0; i < steady; ++i) {
    out.forward(0, warmup + i);
    out.backward(0, i);
  }
  for (int mb = steady; mb < m; ++mb) {
    out.backward(0, mb);
  }
  return out.finish();
}

ActivationBound promisedPeak(const PipelineShape& shape, int rank) {
  const int bound = std::min(shape.stages - rank, shape.microBatches);
  return {bound, bound};
}

double idealBubble(const PipelineShape& shape, const StepDurations&) {
  const double p = shape.stages;
  return (p - 1) / (shape.microBatches + p - 1);
}

}  // namespace

const ScheduleInfo& oneFOneBSchedule() {
  static const ScheduleInfo info{
      "1f1b",       "one forward, one backward with a flush (PipeDream-flush)",
      checkShape,   buildRank,
      promisedPeak, idealBubble};
  return info;
}

}  // namespace parascope
