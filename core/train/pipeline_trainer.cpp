// One pipeline training step and evaluation of one rank.
#include "core/train/pipeline_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

namespace {

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
    update(r, globalGradientNorm(reducer));
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

namespace {

// Index of the tied embedding in the model's parameters, or -1.
int tiedEmbedding(const Model& model) {
  const auto& params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].name == "wte.weight") return static_cast<int>(i);
  return -1;
}

// The part of parameter i that this data-parallel rank's gradient shard holds (ReduceScatter
// mode): `count` elements from `local` in the parameter, at `shard` in the shard.
struct ShardPart {
  std::int64_t local = 0, shard = 0, count = 0;
};
ShardPart shardPart(const FlatLayout& layout, int i, std::int64_t numel, int rank) {
  const auto at = static_cast<std::size_t>(i);
  const FlatBucket& fb = layout.buckets[static_cast<std::size_t>(layout.bucketOf[at])];
  const std::int64_t part = layout.partSize(fb), mine = fb.begin + rank * part;
  const std::int64_t begin = layout.offset[at];
  const std::int64_t lo = std::max(begin, mine), hi = std::min(begin + numel, mine + part);
  if (hi <= lo) return {};
  return {lo - begin, fb.shardOffset + (lo - mine), hi - lo};
}

}  // namespace

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
  ShardPart part;
  Tensor grad;
  if (sharded) {
    Communicator& dp = mesh_.data();
    part = shardPart(reducer->layout(), tied, wte.numel(), dp.rank());
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

// The L2 norm over the whole model: each stage's squares, the tied embedding counted once (on
// the first stage), sharded gradients summed over the data-parallel group, tensor-parallel parts
// summed over the tensor group, then summed over the pipeline ranks.
double PipelineTrainer::globalGradientNorm(const GradientReducer* reducer) {
  Communicator& pipe = mesh_.pipeline();
  const int copy = pipe.size() > 1 && !executor_.holdsFirstStage() ? tiedEmbedding(model_) : -1;
  double whole = 0, split = 0;
  if (reducer != nullptr && reducer->sharded()) {
    std::tie(whole, split) = reducer->squaresBySplit(copy);
    float v[2] = {static_cast<float>(whole), static_cast<float>(split)};
    mesh_.data().allReduce(v, v, 2, DType::F32, ReduceOp::Sum);
    whole = v[0];
    split = v[1];
  } else {
    const auto& params = model_.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = params[i];
      if (static_cast<int>(i) == copy) continue;
      (p.split.whole() ? whole : split) +=
          kernels::sumOfSquaresAny(p.storedGrad().raw(), p.numel(), p.storage);
    }
  }
  if (mesh_.tensor().size() > 1) {
    auto v = static_cast<float>(split);
    mesh_.tensor().allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
    split = v;
  }
  double sq = whole + split;
  if (pipe.size() > 1) {
    auto v = static_cast<float>(sq);
    pipe.allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
    sq = v;
  }
  return std::sqrt(sq);
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
