// Pipeline keys read, then checked against the model, the batch split and the other strategy
// keys.
#include "core/config/pipeline_config.h"

#include <string>

#include "core/common/error.h"

namespace parascope {

PipelineSpec parsePipelineSpec(JsonReader& top, const nlohmann::json& doc, int pipelineSize) {
  PipelineSpec s;
  const bool named = top.has("pipeline_schedule");
  s.schedule = top.choice("pipeline_schedule");
  s.chunks = static_cast<int>(top.integer("virtual_pipeline_model_parallel_size"));
  const std::string recompute = top.choice("recompute_granularity");
  s.recompute = recompute == "full"        ? Recompute::Full
                : recompute == "selective" ? Recompute::Selective
                                           : Recompute::None;
  const char* layoutKey = "pipeline_model_parallel_layout";
  if (doc.is_object() && doc.contains(layoutKey) && doc[layoutKey].is_array()) {
    for (std::int64_t n : top.integers(layoutKey)) {
      s.layerCounts.push_back(static_cast<int>(n));
    }
  } else {
    s.layoutText = top.string(layoutKey, "");
  }
  const bool laidOut = !s.layerCounts.empty() || !s.layoutText.empty();
  s.enabled =
      pipelineSize > 1 || s.chunks > 1 || s.recompute != Recompute::None || named || laidOut;
  return s;
}

void resolvePipeline(TrainConfig& c) {
  PipelineSpec& spec = c.pipeline;
  if (!spec.enabled) return;
  const int p = c.parallel.pipeline;
  const std::string pp = "pipeline_model_parallel_size (" + std::to_string(p) + ")";
  if (p > 1 && !c.model.kind->splitsLayers()) {
    throw UserError("config: " + pp + " > 1 needs model.type " + layerSplittingKinds() +
                    "; valid for \"" + std::string(c.model.kind->name()) + "\": 1");
  }
  checkPipelineShape(spec, {p, c.gradientAccumulation, spec.chunks});
  spec.stages = resolveLayout(spec, p, c.model.kind->layers(c.model));
}

std::vector<int> pipelineRankLayers(const TrainConfig& c, int worldRank) {
  const ParallelStrategy& s = c.parallel;
  // The pipeline coordinate varies slowest (strategy.h), whatever the others.
  const int rank = worldRank / s.ranksPerPipelineRank();
  if (c.pipeline.enabled) return rankLayers(c.pipeline.stages, s.pipeline, rank);
  std::vector<int> all(static_cast<std::size_t>(c.model.kind->layers(c.model).total()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

}  // namespace parascope
