// A strategy's per-rank structure from the engine's own builders: the model kind's layers on a
// tensor group that only knows its rank and size, the trainer's flat layout and data-parallel
// work, the schedule's programs.
#include "core/plan/strategy_plan.h"

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>

#include "core/comm/comm_backend.h"
#include "core/comm/communicator.h"
#include "core/config/pipeline_config.h"
#include "core/model/model.h"
#include "core/parallel/program_builder.h"
#include "core/tensor/allocator.h"
#include "core/train/flat_layout.h"

namespace parascope {

namespace {

// A group that has a rank and a size and nothing to say: layers read their slice of a weight
// from it while they are built; a plan never runs them.
class ShapeOnlyGroup final : public CommBackend {
 public:
  ShapeOnlyGroup(int rank, int size) : CommBackend("plan", {}), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view kind() const override { return "plan"; }
  std::shared_ptr<CommRequest> start(const CommArgs&, bool) override {
    throw std::logic_error("plan: a planned rank does not communicate");
  }
  std::shared_ptr<CommBackend> split(int, int) override {
    throw std::logic_error("plan: a planned rank does not communicate");
  }

 private:
  int rank_, size_;
};

}  // namespace

StrategyPlan planStrategy(const TrainConfig& config) {
  StrategyPlan plan;
  plan.config = config;
  const ParallelStrategy& s = config.parallel;
  const int p = s.pipeline;
  plan.shape = {p, config.gradientAccumulation, config.pipeline.chunks};
  plan.stages = config.pipeline.stages;
  const ModelKind& kind = *config.model.kind;
  plan.layers = kind.layerWork(config);
  if (plan.stages.empty()) plan.stages = {{0, static_cast<int>(plan.layers.size())}};
  plan.flat = s.gradientGroup() > 1 || s.zeroStage >= 1;
  plan.targetsPerStep =
      static_cast<double>(config.globalBatch) * kind.targetsPerSample(config.model);
  if (kind.splitsLayers()) {
    const GptConfig& g = config.model.gpt;
    plan.boundaryElements = static_cast<double>(config.microBatch) * g.contextLength / s.context *
                            g.hiddenSize / (s.sequenceParallel ? s.tensor : 1);
  }
  const std::vector<Program> programs =
      buildSchedule(findSchedule(config.pipeline.schedule), plan.shape);
  const Communicator tensorGroup(std::make_shared<ShapeOnlyGroup>(0, s.tensor));
  for (int q = 0; q < p; ++q) {
    RankPlan r;
    r.pipelineRank = q;
    // World rank of pipeline rank q's first (strategy.h: pipeline is the slowest coordinate).
    const int worldRank = s.ranksPerPipelineRank() * q;
    const std::vector<int> layers = pipelineRankLayers(config, worldRank);
    Allocator allocator;
    Model model(allocator, s.compute, ModelStorage{.values = false, .gradients = false});
    kind.addLayers(model, config, tensorGroup, allocator, layers);
    for (const Parameter& param : model.parameters()) {
      r.parameterElements += param.numel();
      r.largestParameterElements = std::max(r.largestParameterElements, param.numel());
      if (param.name == "wte.weight" && p > 1) r.tiedEmbeddingElements = param.numel();
    }
    for (const auto& layer : model.layers()) {
      PlannedLayer& planned = r.modelLayers.emplace_back();
      for (const Parameter* param : layer->parameters())
        planned.parameterElements += param->numel();
      planned.splitsBackward = layer->splitsBackward();
    }
    for (const LayerRange& chunk : rankChunkRanges(plan.stages, p, q)) {
      // Back to whole-model indices: the rank's layers are `layers`, in order.
      r.chunks.push_back({layers[static_cast<std::size_t>(chunk.begin)],
                          layers[static_cast<std::size_t>(chunk.end - 1)] + 1});
    }
    DataParallelWork work;
    if (plan.flat) {
      r.layout = makeFlatLayout(model, s.gradientGroup(), s);
      const FlatLayout& layout = r.layout;
      r.flatElements = layout.total;
      for (const FlatBucket& b : layout.buckets) r.bucketElements.push_back(b.count);
      const std::vector<LayerRange> local = rankChunkRanges(plan.stages, p, q);
      const bool sharded = s.zeroStage >= 2;
      work = dataParallelWork(layout, local, sharded ? Op::ZeroScatter : Op::ReduceGradBucket,
                              sharded && !config.pipeline.enabled, s.zeroStage >= 3);
      if (s.zeroStage >= 3) {
        for (const LayerRange& chunk : local) {
          std::set<int> buckets;
          for (int layer = chunk.begin; layer < chunk.end; ++layer) {
            const auto& b = layout.layerBuckets[static_cast<std::size_t>(layer)];
            buckets.insert(b.begin(), b.end());
          }
          r.chunkBuckets.emplace_back(buckets.begin(), buckets.end());
        }
      }
    }
    r.program = addDataParallelWork(programs[static_cast<std::size_t>(q)], work);
    plan.ranks.push_back(std::move(r));
  }
  return plan;
}

}  // namespace parascope
