// The pipeline path of Trainer::step and Trainer::evaluate: one rank's stage(s) of the model
// run by the PipelineExecutor, with the step's micro-batches being its gradient accumulation
// steps. Around the program: the data-parallel reducer armed for the step (its hooks fire at each
// layer's last weight gradient), and inside the OptStep instruction the reduction's completion,
// the tied embedding's gradient summed between the first and last stage (as Megatron does), the
// global gradient norm over all stages, and the optimizer. Losses are broadcast from the last
// stage and reduced over data-parallel ranks, so every rank reports the same global mean.
#pragma once

#include <functional>

#include "core/parallel/pipeline_executor.h"
#include "core/train/trainer.h"

namespace parascope {

class PipelineTrainer {
 public:
  // model: the rank's layers (pipelineRankLayers). Collective over the mesh's pipeline group.
  PipelineTrainer(const TrainConfig& config, Model& model, DeviceMesh& mesh, const Dataset& data);

  // stepIndex: 0-based. reducer and sharded may be null (one data-parallel rank, ZeRO 0), and
  // optimizer is null exactly when sharded is not. onReduced runs once the gradients are reduced,
  // before clipping and the optimizer (Trainer::setGradientObserver).
  StepReport step(int stepIndex, GradientReducer* reducer, AdamW* optimizer, ShardedAdamW* sharded,
                  const std::function<void()>& onReduced);
  EvalReport evaluate(int stepIndex);
  const PipelineExecutor& executor() const { return executor_; }

 private:
  void optimizerStep(int stepIndex, StepReport& r, GradientReducer* reducer, AdamW* optimizer,
                     ShardedAdamW* sharded, const std::function<void()>& onReduced);
  void sumTiedEmbedding();
  double globalGradientNorm();

  const TrainConfig& config_;
  Model& model_;
  DeviceMesh& mesh_;
  const Dataset& data_;
  PipelineExecutor executor_;
};

}  // namespace parascope
