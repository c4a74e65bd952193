// The pipeline path of Trainer::step and Trainer::evaluate: one rank's stage(s) of the model
// run by the PipelineExecutor, with the step's micro-batches being its gradient accumulation
// steps. Around the program: the data-parallel reducer armed for the step (its hooks fire at each
// layer's last weight gradient; under ZeRO-2 / 3 also before each weight pass, for storage), and
// inside the OptStep instruction the reduction's completion, the tied embedding's gradient summed
// between the first and last stage (as Megatron does; from the shards under ZeRO-2 / 3), the
// global gradient norm over all stages, and the optimizer. ZeRO-3's gathers follow the model's
// pass hooks (param_gatherer.h). Losses are broadcast from the last
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

  // After the step's gradients are complete (reduced, the tied embedding summed), inside the
  // OptStep instruction: the overflow check, clipping and the optimizer, given the global norm
  // of the (loss-scaled) gradients.
  using Update = std::function<void(StepReport&, double gradNorm)>;

  // stepIndex: 0-based; lossScale: what the loss gradient is multiplied by (fp16; else 1).
  // reducer may be null (one data-parallel rank, ZeRO 0).
  StepReport step(int stepIndex, float lossScale, GradientReducer* reducer, const Update& update);
  EvalReport evaluate(int stepIndex);
  const PipelineExecutor& executor() const { return executor_; }

 private:
  void sumTiedEmbedding(const GradientReducer* reducer);

  const TrainConfig& config_;
  Model& model_;
  DeviceMesh& mesh_;
  const Dataset& data_;
  PipelineExecutor executor_;
};

}  // namespace parascope
