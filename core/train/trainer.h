// Training session of one rank: builds the model and dataset from a TrainConfig, runs
// optimizer steps (gradient accumulation over micro-batches, clipping, AdamW, lr schedule),
// evaluates on the validation split, and reports through an observer so the CLI and the GUI
// present the same run. With a world of several ranks it is one data-parallel replica: it
// trains on its slice of every global batch, reduces gradients in overlapped buckets
// (grad_reducer.h) and, with ZeRO stage 1, 2 or 3, keeps and updates only its shard of the
// optimizer state, gradients and parameters (sharded_optimizer.h, param_gatherer.h). Reported
// losses are global means, the same on every rank.
#pragma once

#include <cstdint>
#include <memory>

#include "core/data/dataset.h"
#include "core/model/model.h"
#include "core/parallel/mesh.h"
#include "core/train/config.h"
#include "core/train/grad_reducer.h"
#include "core/train/optimizer.h"
#include "core/train/param_gatherer.h"
#include "core/train/sharded_optimizer.h"

namespace parascope {

struct StepReport {
  int step = 0;  // 1-based, after the update
  int totalSteps = 0;
  double loss = 0;  // mean over the step's targets, before the update
  double lr = 0;
  double gradNorm = 0;  // before clipping
  double seconds = 0;   // wall time of this step
  std::int64_t samples = 0;
  std::int64_t tokens = 0;  // targets processed (positions for text, images for classification)
  // This rank's time blocked on data-parallel communication not hidden behind compute: gradient
  // reduction after backward, ZeRO's parameter all-gathers (this step's evaluation excluded).
  double exposedCommSeconds = 0;
};

struct EvalReport {
  int step = 0;
  double loss = 0;      // mean per target, nats
  double accuracy = 0;  // fraction of targets predicted right
  std::int64_t targets = 0;
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void onStep(const StepReport&) {}
  virtual void onEval(const EvalReport&) {}
};

class Trainer {
 public:
  // Throws UserError for data that does not fit the model (e.g. bytes beyond the vocabulary).
  // `world` holds every rank of the run (collective: all ranks construct together); its size
  // must be the product of the parallel degrees in config.parallel.
  explicit Trainer(const TrainConfig& config, Allocator& allocator = defaultAllocator(),
                   const Communicator& world = Communicator());
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  StepReport step();
  EvalReport evaluate();
  // train_iters steps, evaluating every eval_interval steps and at the end; saves weights if
  // configured. Returns the last evaluation.
  EvalReport run(TrainObserver& observer);

  Model& model() { return *model_; }
  const Dataset& dataset() const { return *dataset_; }
  const TrainConfig& config() const { return config_; }
  int stepsDone() const { return steps_; }
  DeviceMesh& mesh() { return mesh_; }
  // Collective. With ZeRO-3 gathers every parameter so that model() holds whole values until
  // the next step; otherwise nothing to do.
  void gatherParameters();

 private:
  void setUpDataParallel();
  double reduceOverData(double value);

  TrainConfig config_;
  std::unique_ptr<Dataset> dataset_;
  std::unique_ptr<Model> model_;
  DeviceMesh mesh_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<GradientReducer> reducer_;     // data parallel or ZeRO
  std::unique_ptr<ShardedAdamW> sharded_;        // ZeRO stage >= 1
  std::unique_ptr<ParameterGatherer> gatherer_;  // ZeRO stage 3
  int steps_ = 0;
};

}  // namespace parascope
