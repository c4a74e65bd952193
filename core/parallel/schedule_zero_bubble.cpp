// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"): 1F1B with the backward split into
// B (input gradient, on the critical path) and W (weight gradient, deferrable). Rank r keeps
// 1F1B's order of forwards and Bs but runs each W r micro-batches late, and the last r at the
// end, so Bs travel down the pipeline sooner and the Ws fill what was the cool-down bubble.
// At most p - r micro-batches wait for their B and at most p wait for their W on any rank: the
// largest holding of 1F1B (rank 0's p), so the peak over ranks is 1F1B's, as the paper states.
#include <algorithm>

#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

void checkShape(const PipelineShape& shape) {
  checkOneChunk("zb-h1", shape);
}

Program buildRank(const PipelineShape& shape, int rank) {
  ProgramBuilder out(shape, rank);
  const int m = shape.microBatches;
  const int warmup = std::min(shape.stages - rank - 1, m);
  const int steady = m - warmup;
  int nextWeight = 0;
  auto inputGrad = [&](int mb) {
    out.backwardInput(0, mb);
    if (mb - rank >= 0) {
      out.backwardWeight(0, nextWeight++);
    }
  };
  for (int mb = 0; mb < warmup; ++mb) {
    out.forward(0, mb);
  }
  for (int i = 0; i < steady; ++i) {
    out.forward(0, warmup + i);
    inputGrad(i);
  }
  for (int mb = steady; mb < m; ++mb) {
    inputGrad(mb);
  }
  while (nextWeight < m) {
    out.backwardWeight(0, nextWeight++);
  }
  return out.finish();
}

ActivationBound promisedPeak(const PipelineShape& shape, int rank) {
  return {std::min(shape.stages - rank, shape.microBatches),
          std::min(shape.stages, shape.microBatches)};
}

// The paper's (p - 1)(tF + tB - tW) bubble over a step of m(tF + tB + tW) compute; exact for
// m >= p and tW <= min(tF, tB).
double idealBubble(const PipelineShape& shape, const StepDurations& d) {
  const double p = shape.stages;
  const double bubble = (p - 1) * (d.forward + d.backwardInput - d.backwardWeight);
  const double work = shape.microBatches * (d.forward + d.backwardInput + d.backwardWeight);
  return bubble / (work + bubble);
}

}  // namespace

const ScheduleInfo& zeroBubbleH1Schedule() {
  static const ScheduleInfo info{
      "zb-h1",      "zero-bubble H1: 1F1B with weight gradients deferred (Qi et al.)",
      checkShape,   buildRank,
      promisedPeak, idealBubble};
  return info;
}

}  // namespace parascope
