// Training session of one rank: builds the model and dataset from a TrainConfig, runs
// optimizer steps (gradient accumulation over micro-batches, clipping, AdamW, lr schedule) as
// one step program per rank run by the step executor (step_executor.h; no pipeline is p = 1),
// evaluates on the validation split, and reports through an observer so the CLI and the GUI
// present the same run. With a world of several ranks it is one data-parallel replica: it
// trains on its slice of every global batch, reduces gradients in overlapped buckets
// (grad_reducer.h) and, with ZeRO stage 1, 2 or 3, keeps and updates only its shard of the
// optimizer state, gradients and parameters (sharded_optimizer.h, param_gatherer.h). With
// bf16 / fp16 enabled the model computes in mixed precision (model.h) and fp16 scales the loss
// (loss_scaler.h), skipping steps whose gradients overflow. Reported losses are global means,
// the same on every rank.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/config/config.h"
#include "core/data/dataset.h"
#include "core/model/model.h"
#include "core/parallel/mesh.h"
#include "core/parallel/tensor_parallel.h"
#include "core/pipeline/step_executor.h"
#include "core/state/training_state.h"
#include "core/train/grad_reducer.h"
#include "core/train/loss_scaler.h"
#include "core/train/optimizer.h"
#include "core/train/param_gatherer.h"
#include "core/train/sharded_optimizer.h"
#include "core/train/step_report.h"

namespace parascope {

// The kernels of a device: the CPU's, or a CUDA device's (a build without CUDA refuses one). A
// GPU's products take a 16-bit `compute` type's inputs on its tensor cores.
std::shared_ptr<const kernels::KernelOps> kernelsFor(Device device, DType compute = DType::F32);

class Trainer {
 public:
  // Throws UserError for data that does not fit the model (e.g. bytes beyond the vocabulary).
  // `world` holds every rank of the run (collective: all ranks construct together); its size
  // must be the product of the parallel degrees in config.parallel.
  // initialize false: parameters are left for the caller to fill through state() (a switch or a
  // checkpoint restores them), which saves drawing the initial values.
  explicit Trainer(const TrainConfig& config, Allocator& allocator = defaultAllocator(),
                   const Communicator& world = Communicator(), bool initialize = true);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  StepReport step();
  EvalReport evaluate();
  // Collective. Writes the whole logical model to config().saveWeights from rank 0 (no-op when
  // it is empty); the session calls it at the end of a run.
  void saveWeights();

  Model& model() { return *model_; }
  const Dataset& dataset() const { return *dataset_; }
  const TrainConfig& config() const { return config_; }
  int stepsDone() const { return steps_; }
  DeviceMesh& mesh() { return mesh_; }
  // Collective. Makes every parameter's `value` hold its whole f32 value until the next step:
  // with ZeRO-3 gathers them, with mixed precision widens the stored 16-bit values.
  void gatherParameters();
  const LossScaler& lossScaler() const { return scaler_; }
  // The training state this rank holds, by logical tensor (core/state/training_state.h): each
  // parameter's f32 value (the master under mixed precision), AdamW's moments, and under mixed
  // precision the stored 16-bit values (written by rounding the master). The pointers stay valid
  // while the trainer lives; writing through them and then restoreCounters() continues a run.
  // On a GPU they point into host copies made by this call: stateWritten() copies what was
  // written back to the device, releaseState() frees the copies once only read (both do nothing
  // on the CPU, where the slices are the state itself).
  RankState state();
  void stateWritten();
  void releaseState();
  void restoreCounters(const TrainingCounters& counters);
  // Fault injection for tests: in the step whose 0-based index is `step` (call once per step),
  // this rank writes +inf into the first gradient element it holds after the gradients are
  // reduced, so the ranks must agree on the overflow; fp16 loss scaling then skips that step.
  void injectGradientOverflow(int step) { faultSteps_.push_back(step); }
  // Called in every step once the gradients are reduced (over data-parallel ranks, and between a
  // pipeline's two copies of a tied embedding) and before clipping and the optimizer read them,
  // so that tests can compare the gradients of different layouts. Every rank calls it at the
  // same point, so it may communicate over the mesh.
  using GradientObserver = std::function<void(Trainer&)>;
  void setGradientObserver(GradientObserver observer) { gradientObserver_ = std::move(observer); }
  // Where the reduced gradients are (grad_reducer.h): null with one data-parallel rank and
  // ZeRO 0, where each parameter's stored gradient holds its own.
  const GradientReducer* gradientReducer() const { return reducer_.get(); }

 private:
  // seed: initialise the parameters ZeRO stores (none: a state is loaded into them next).
  void setUpDataParallel(std::optional<std::uint64_t> seed);
  DataParallelWork dataParallelWork(const std::vector<LayerRange>& chunks) const;
  StepSetup stepSetup();
  Batch hostBatch(Split split, std::int64_t first, int rows);
  // t's memory for state(): t's own on the host, else a host copy kept in staged_.
  void* stateView(const Tensor& t);
  int tiedEmbedding() const;  // index of wte.weight in the model's parameters, or -1
  double sumTiedEmbedding();  // the seconds it took (0 where there is nothing to sum)
  double reduceOverData(double value);
  // Bytes read from and written to this rank's swap files so far (optimizer and parameters).
  std::int64_t swapBytes() const;
  bool overflowed(double gradNorm);
  void update(StepReport& r, double gradNorm);

  TrainConfig config_;
  std::unique_ptr<Dataset> dataset_;
  std::unique_ptr<Model> model_;
  DeviceMesh mesh_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<GradientReducer> reducer_;      // data parallel or ZeRO
  std::unique_ptr<ShardedAdamW> sharded_;         // ZeRO stage >= 1
  std::unique_ptr<ParameterGatherer> gatherer_;   // ZeRO stage 3
  std::unique_ptr<StepExecutor> executor_;        // runs every step's program
  std::shared_ptr<TensorParallelRegion> region_;  // GPT: shared with its layers
  LossScaler scaler_;
  int steps_ = 0;
  int skipped_ = 0;  // overflowed steps: the lr schedule does not advance on them (DeepSpeed)
  std::vector<int> faultSteps_;
  std::vector<std::pair<Tensor, Tensor>> staged_;  // (device tensor, its host copy), state()'s
  GradientObserver gradientObserver_;
};

}  // namespace parascope
