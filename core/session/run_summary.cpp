// Model descriptions and FLOP counts for the session's start report.
#include "core/session/run_summary.h"

namespace parascope {

std::int64_t modelParameters(const TrainConfig& c, const Model& m) {
  return c.model.kind->parameters(c.model, m);
}

std::string describeModel(const TrainConfig& c, const Model& m) {
  return c.model.kind->describe(c.model, static_cast<double>(modelParameters(c, m)) / 1e6);
}

double modelFlopsPerToken(const TrainConfig& c) {
  return c.model.kind->flopsPerTarget(c.model);
}

std::string describeStrategy(const TrainConfig& c) {
  const ParallelStrategy& s = c.parallel;
  std::string text = "D" + std::to_string(s.data) + " T" + std::to_string(s.tensor) + " P" +
                     std::to_string(s.pipeline);
  if (s.context > 1) text += " CP" + std::to_string(s.context);
  if (c.pipeline.enabled && s.pipeline > 1) text += " " + c.pipeline.schedule;
  if (c.pipeline.chunks > 1) text += " v" + std::to_string(c.pipeline.chunks);
  if (c.gradientAccumulation > 1) text += " m" + std::to_string(c.gradientAccumulation);
  if (s.zeroStage > 0) text += " ZeRO-" + std::to_string(s.zeroStage);
  if (s.sequenceParallel) text += " SP";
  if (s.compute != DType::F32) text += " " + std::string(dtypeName(s.compute));
  if (c.pipeline.recompute != Recompute::None) {
    text += " recompute=" + std::string(recomputeName(c.pipeline.recompute));
  }
  return text;
}

}  // namespace parascope
