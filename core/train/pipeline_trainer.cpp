// One pipeline training step and evaluation of one rank.
#include "core/train/pipeline_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"
#include "core/train/grad_norm.h"

namespace parascope {

namespace {

// Index of the tied embedding in the model's parameters, or -1.
int tiedEmbedding(const Model& model) {
  const auto& params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].name == "wte.weight") return static_cast<int>(i);
  return -1;
}

PipelineSetup makeSetup(const TrainConfig& c, const Communicator& pipeline) {
  PipelineSetup s;
  s.shape = {pipeline.size(), c.gradientAccumulation, c.pipeline.chunks};
  s.schedule = c.pipeline.schedule;
  s.stages = c.pipeline.stages;
  s.recompute = c.pipeline.recompute;
  const std::int64_t width = c.model.gpt.hiddenSize;
  // Sequence parallelism hands each tensor rank 1/t of the token rows between layers.
  const int rowShare = c.parallel.sequenceParallel ? c.parallel.tensor : 1;
  s.boundary = [width, rowShare](const Batch& b) {
    return Shape{b.inputs.dim(0), b.inputs.dim(1) / rowShare, width};
  };
  return s;
}

}  // namespace

PipelineTrainer::PipelineTrainer(const TrainConfig& config, Model& model, DeviceMesh& mesh,
                                 const Dataset& data)
    : config_(config),
      model_(model),
      mesh_(mesh),
      data_(data),
      executor_(model, mesh.pipeline(), makeSetup(config, mesh.pipeline())) {}

StepReport PipelineTrainer::step(int stepIndex, float lossScale, GradientReducer* reducer,
                                 const Update& update) {
  const auto start = std::chrono::steady_clock::now();
  const TrainConfig& c = config_;
  const std::int64_t targetsPerStep =
      static_cast<std::int64_t>(c.globalBatch) * data_.targetsPerSample();
  StepReport r;
  if (reducer != nullptr) {
    reducer->beginStep();
    // One reduction per step: the hooks fire once per layer, at its last weight gradient.
    reducer->beginMicroStep(true);
  } else {
    model_.zeroGrad();
  }
  // Micro-batch k covers the same samples as micro-step k of Trainer::step.
  const int dp = mesh_.data().size(), d = mesh_.data().rank();
  auto batches = [&](int k) {
    const std::int64_t first = static_cast<std::int64_t>(stepIndex) * c.globalBatch +
                               (static_cast<std::int64_t>(k) * dp + d) * c.microBatch;
    const trace::Span load("data_load", trace::Category::DataLoad, trace::lane::kData);
    Batch b = data_.batch(Split::Train, first, c.microBatch, model_.allocator());
    b.lossWeight = lossScale / static_cast<float>(targetsPerStep);
    return b;
  };
  const PipelineStepStats stats = executor_.run(batches, [&] {
    if (reducer != nullptr) r.exposedCommSeconds += reducer->endMicroStep();
    // Waiting for activations and gradients is the pipeline's idle time; the tied embedding's
    // exchange is communication nothing hides.
    const auto tied = std::chrono::steady_clock::now();
    sumTiedEmbedding(reducer);
    r.exposedCommSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - tied).count();
    // The tied embedding's gradient counts once, on the first stage.
    const bool copy = mesh_.pipeline().size() > 1 && !executor_.holdsFirstStage();
    update(r, globalGradientNorm(model_, reducer, mesh_, copy ? tiedEmbedding(model_) : -1));
  });
  double lossSum = stats.lossSum;
  if (dp > 1) {
    auto v = static_cast<float>(lossSum);
    mesh_.data().allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
    lossSum = v;
  }
  r.step = stepIndex + 1;
  r.totalSteps = c.trainIters;
  r.loss = lossSum / static_cast<double>(targetsPerStep);
  r.samples = c.globalBatch;
  r.tokens = targetsPerStep;
  r.pipelineBusySeconds = stats.busySeconds;
  r.pipelineIdleSeconds = stats.idleSeconds();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// The embedding (first stage) and the head (last stage) each hold a copy of the tied wte; their
// gradients are summed so that both copies take the same update. The step's transfers between
// the two ranks are all received by now, so this exchange is the next message on the pair.
// With ZeRO-2 / 3 a rank holds only its shard of the reduced gradient, and the two stages' flat
// layouts place wte differently, so each rank rebuilds the stage's whole reduced wte gradient
// first (an all-reduce of the parts, each rank contributing its own and zeros: exact), exchanges
// that, and keeps its own part of the sum: the same sum as without sharding.
void PipelineTrainer::sumTiedEmbedding(const GradientReducer* reducer) {
  Communicator& pipe = mesh_.pipeline();
  const int last = executor_.setup().shape.rankOf(executor_.setup().shape.virtualStages() - 1);
  if (pipe.size() == 1 || !(executor_.holdsFirstStage() || executor_.holdsLastStage())) return;
  const int tied = tiedEmbedding(model_);
  if (tied < 0) return;
  Parameter& wte = model_.parameters()[static_cast<std::size_t>(tied)];
  const int peer = executor_.holdsFirstStage() ? last : 0;
  const auto n = static_cast<std::size_t>(wte.numel());
  const trace::Span span("tied_embedding_sum", trace::Category::Communication,
                         trace::lane::kCommunication);
  const DType type = wte.storage;
  const bool sharded = reducer != nullptr && reducer->sharded();
  FlatLayout::Part part;
  Tensor grad;
  if (sharded) {
    Communicator& dp = mesh_.data();
    part = reducer->layout().partOf(tied, wte.numel(), dp.rank());
    grad = Tensor::zeros({wte.numel()}, type, MemoryCategory::CommBuffer, model_.allocator());
    if (part.count > 0)
      grad.slice(part.local, part.count)
          .copyFrom(reducer->gradients().slice(part.shard, part.count));
    dp.allReduce(grad.raw(), grad.raw(), n, type, ReduceOp::Sum);
  } else {
    grad = wte.storedGrad();
  }
  Tensor theirs = Tensor::empty(wte.shape, type, MemoryCategory::CommBuffer, model_.allocator());
  CommHandle sent = pipe.sendAsync(grad.raw(), n, type, peer);
  pipe.recv(theirs.raw(), n, type, peer);
  sent.wait();
  // a + b == b + a, and under mixed precision round(a + b) == round(b + a): both copies agree.
  if (type == DType::F32) {
    float* g = grad.data<float>();
    const float* t = theirs.data<float>();
    for (std::size_t i = 0; i < n; ++i) g[i] += t[i];
  } else {
    Tensor wide =
        Tensor::empty(wte.shape, DType::F32, MemoryCategory::CommBuffer, model_.allocator());
    kernels::widen(theirs.data<std::uint16_t>(), wide.data<float>(), wte.numel(), type);
    kernels::accumulateRounded(grad.data<std::uint16_t>(), wide.data<float>(), wte.numel(), type);
  }
  if (sharded && part.count > 0)
    reducer->gradients().slice(part.shard, part.count).copyFrom(grad.slice(part.local, part.count));
}

EvalReport PipelineTrainer::evaluate(int stepIndex) {
  const int rows = config_.microBatch;
  const std::int64_t available = data_.samples(Split::Validation);
  // As Trainer::evaluate: images the whole test set, text eval_iters fixed windows.
  const bool whole = config_.evalIters == 0 || config_.model.kind == ModelSpec::Kind::Mlp;
  const std::int64_t total =
      whole ? available : static_cast<std::int64_t>(config_.evalIters) * rows;
  // Data-parallel replicas take turns over the validation micro-batches.
  const int dp = mesh_.data().size(), d = mesh_.data().rank();
  std::vector<std::int64_t> firsts;
  for (std::int64_t first = static_cast<std::int64_t>(d) * rows; first < total;
       first += static_cast<std::int64_t>(dp) * rows) {
    firsts.push_back(first);
  }
  auto batches = [&](int k) {
    const std::int64_t first = firsts[static_cast<std::size_t>(k)];
    const int n = static_cast<int>(std::min<std::int64_t>(rows, total - first));
    return data_.batch(Split::Validation, first, n, model_.allocator());
  };
  const MicroBatchResult m = executor_.evaluate(batches, static_cast<int>(firsts.size()));
  EvalReport r;
  r.step = stepIndex;
  double lossSum = m.lossSum;
  std::int64_t counts[2] = {m.correct, m.targets};
  if (dp > 1) {
    mesh_.data().allReduce(counts, counts, 2, DType::I64, ReduceOp::Sum);
    auto v = static_cast<float>(lossSum);
    mesh_.data().allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
    lossSum = v;
  }
  r.targets = counts[1];
  r.loss = r.targets ? lossSum / static_cast<double>(r.targets) : 0.0;
  r.accuracy = r.targets ? static_cast<double>(counts[0]) / static_cast<double>(r.targets) : 0.0;
  return r;
}

}  // namespace parascope
