// Interleaved 1F1B (Narayanan et al. 2021, Megatron's virtual pipeline): each rank holds v
// model chunks, stage s on rank s % p. Forwards go through the micro-batches in groups of p,
// chunk 0 to v-1 within a group; backwards visit the chunks in reverse. Rank r warms up with
// 2(p - r - 1) + (v - 1)p forwards, as in Megatron. Like Megatron we require m to be a
// multiple of p; unlike it we do not switch to all-forwards-first when m == p (our sends never
// block, so 1F1B order is safe there too).
#include <algorithm>
#include <string>

#include "core/common/error.h"
#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

void checkShape(const PipelineShape& shape) {
  if (shape.chunks < 2) {
    throw UserError("schedule interleaved needs at least 2 model chunks per rank, got v=" +
                    std::to_string(shape.chunks) + "; with one chunk use '1f1b'");
  }
  if (shape.microBatches % shape.stages != 0) {
    throw UserError(
        "schedule interleaved needs micro-batches m to be a multiple of pipeline "
        "stages p, got m=" +
        std::to_string(shape.microBatches) + " and p=" + std::to_string(shape.stages));
  }
}

int warmupForwards(const PipelineShape& shape, int rank) {
  const int p = shape.stages;
  return std::min(2 * (p - rank - 1) + (shape.chunks - 1) * p, shape.microBatches * shape.chunks);
}

// The k-th (chunk, micro-batch) unit a rank runs forward: groups of p micro-batches, each
// group visiting every chunk in turn. Backward order is the same with the chunks reversed.
int unitMicroBatch(const PipelineShape& shape, int k) {
  const int group = shape.stages * shape.chunks;
  return (k / group) * shape.stages + k % shape.stages;
}
int unitChunk(const PipelineShape& shape, int k, bool forward) {
  const int chunk = (k % (shape.stages * shape.chunks)) / shape.stages;
  return forward ? chunk : shape.chunks - 1 - chunk;
}

Program buildRank(const PipelineShape& shape, int rank) {
  ProgramBuilder out(shape, rank);
  const int total = shape.microBatches * shape.chunks;
  const int warmup = warmupForwards(shape, rank);
  auto forward = [&](int k) { out.forward(unitChunk(shape, k, true), unitMicroBatch(shape, k)); };
  auto backward = [&](int k) {
    out.backward(unitChunk(shape, k, false), unitMicroBatch(shape, k));
  };
  for (int k = 0; k < warmup; ++k) {
    forward(k);
  }
  for (int k = 0; k < total - warmup; ++k) {
    forward(warmup + k);
    backward(k);
  }
  for (int k = total - warmup; k < total; ++k) {
    backward(k);
  }
  return out.finish();
}

ActivationBound promisedPeak(const PipelineShape& shape, int rank) {
  const int bound = std::min(warmupForwards(shape, rank) + 1, shape.microBatches * shape.chunks);
  return {bound, bound};
}

double idealBubble(const PipelineShape& shape, const StepDurations&) {
  const double p = shape.stages;
  return (p - 1) / (static_cast<double>(shape.chunks) * shape.microBatches + p - 1);
}

}  // namespace

const ScheduleInfo& interleavedSchedule() {
  static const ScheduleInfo info{
      "interleaved", "interleaved 1F1B over v model chunks per rank (Megatron)",
      checkShape,    buildRank,
      promisedPeak,  idealBubble};
  return info;
}

}  // namespace parascope
