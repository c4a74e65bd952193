#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/common/error.h"
#include "core/config/pipeline_config.h"
#include "core/data/idx_dataset.h"
#include "core/data/text_dataset.h"
#include "core/io/safetensors.h"
#include "core/kernels/grad_clip.h"
#include "core/kernels/precision.h"
#include "core/kernels/sgemm_library.h"
#include "core/model/gpt_layers.h"
#include "core/trace/trace.h"
#include "core/train/grad_norm.h"

#if PARASCOPE_HAVE_CUDA
#include "core/cuda/cuda_ops.h"
#include "core/cuda/gemm_peak.h"
#endif

namespace parascope {

// On a CUDA device, on a compute stream of the rank's own (core/cuda/stream.h). Under
// mixed precision a GPU's products take their f32 operands as 16-bit values on the tensor cores,
// with f32 accumulation, as PyTorch's autocast casts them. The parameters' working copies are
// 16-bit values already, and so is what a layer keeps or hands on; a tensor made and used inside
// one layer's pass (a layernorm's output into its product, say) is rounded there, where the
// CPU's product takes it unrounded: within bf16's tolerance of the CPU, not its bits.
std::shared_ptr<const kernels::KernelOps> kernelsFor(Device device, DType compute) {
#if PARASCOPE_HAVE_CUDA
  if (device.kind == Device::Kind::Cuda) {
    return cuda::cudaOps(device.index, cuda::productsFor(compute));
  }
#else
  (void)compute;
#endif
  if (device.kind != Device::Kind::Cpu)
    throw UserError("this build has no CUDA (it was built without the CUDA toolkit)");
  return {std::shared_ptr<void>(), &kernels::cpuOps()};
}

Trainer::Trainer(const TrainConfig& config, Allocator& allocator, const Communicator& world,
                 bool initialize)
    : config_(config), scaler_(config.parallel.lossScale, config.parallel.compute == DType::F16) {
  kernels::setBlasThreads(1);  // one BLAS thread per rank: ranks are the parallelism
  // ZeRO's storage (flat_layout.h) replaces the model's own: the model allocates none of it.
  const ParallelStrategy& s = config.parallel;
  const bool flat = s.data > 1 || s.zeroStage >= 1;
  checkDeviceSupport(config, allocator.device());
  model_ = std::make_unique<Model>(allocator, s.compute,
                                   ModelStorage{.values = s.zeroStage == 0, .gradients = !flat});
  if (allocator.device().kind != Device::Kind::Cpu)
    model_->setOps(kernelsFor(allocator.device(), s.compute));
  if (world.size() > 1 || config.parallel.worldSize() > 1)
    mesh_ = DeviceMesh(world, config.parallel);
  BuiltModel built = config_.model.kind->build(*model_, config_, mesh_.tensor(), allocator,
                                               pipelineRankLayers(config_, world.rank()));
  dataset_ = std::move(built.dataset);
  region_ = std::move(built.region);
  const std::optional<std::uint64_t> seed =
      initialize ? std::optional<std::uint64_t>(config.seed) : std::nullopt;
  if (seed) model_->initialize(*seed);
  setUpDataParallel(seed);
  executor_ = std::make_unique<StepExecutor>(*model_, mesh_.pipeline(), stepSetup());
}

// DeepSpeed's ZeRO-2 reduce-scatters every micro-batch, so that full-size gradient buckets live
// only briefly; a pipeline (as Megatron's distributed optimizer) reduces once per step.
DataParallelWork Trainer::dataParallelWork(const std::vector<LayerRange>& chunks) const {
  if (!reducer_) return {};
  return parascope::dataParallelWork(
      reducer_->layout(), chunks, reducer_->sharded() ? Op::ZeroScatter : Op::ReduceGradBucket,
      reducer_->sharded() && !config_.pipeline.enabled, gatherer_ != nullptr);
}

StepSetup Trainer::stepSetup() {
  const TrainConfig& c = config_;
  StepSetup s;
  s.shape = {mesh_.pipeline().size(), c.gradientAccumulation, c.pipeline.chunks};
  s.schedule = c.pipeline.schedule;
  s.pipeline = c.pipeline.enabled;
  s.stages = c.pipeline.stages;
  if (s.stages.empty()) s.stages = {{0, static_cast<int>(model_->layers().size())}};
  s.recompute = c.pipeline.recompute;
  const std::int64_t width = c.model.gpt.hiddenSize;
  // Sequence parallelism hands each tensor rank 1/t of the token rows between layers.
  const int rowShare = c.parallel.sequenceParallel ? c.parallel.tensor : 1;
  s.boundary = [width, rowShare](const Batch& b) {
    return Shape{b.inputs.dim(0), b.inputs.dim(1) / rowShare, width};
  };
  s.dataParallel =
      dataParallelWork(rankChunkRanges(s.stages, s.shape.stages, mesh_.pipeline().rank()));
  if (reducer_) {
    GradientReducer& reducer = *reducer_;
    s.hooks.beginRound = [&reducer] { reducer.beginMicroStep(true); };
    s.hooks.reduce = [&reducer](int b) { reducer.issue(b); };
    s.hooks.finishRound = [&reducer] { return reducer.endMicroStep(); };
  }
  if (gatherer_) {
    ParameterGatherer& gatherer = *gatherer_;
    s.hooks.gather = [&gatherer](int b) { gatherer.prefetch(b); };
  }
  return s;
}

Trainer::~Trainer() = default;

void Trainer::setUpDataParallel(std::optional<std::uint64_t> seed) {
  Communicator& dp = mesh_.data();
  const ParallelStrategy& s = config_.parallel;
  if (dp.size() == 1 && s.zeroStage == 0) {
    optimizer_ = std::make_unique<AdamW>(*model_, config_.adamw);
    return;
  }
  const FlatLayout layout = makeFlatLayout(*model_, dp.size(), s);
  const auto mode =
      s.zeroStage >= 2 ? GradientReducer::Mode::ReduceScatter : GradientReducer::Mode::AllReduce;
  reducer_ =
      std::make_unique<GradientReducer>(*model_, layout, dp, mode, s.overlapComm, s.gradComm);
  if (s.zeroStage >= 3) {
    gatherer_ = std::make_unique<ParameterGatherer>(*model_, layout, dp, s, seed);
    sharded_ = std::make_unique<ShardedAdamW>(*model_, layout, dp, config_.adamw, s, seed,
                                              gatherer_->shard(), gatherer_->swap());
  } else if (s.zeroStage >= 1) {
    sharded_ = std::make_unique<ShardedAdamW>(*model_, layout, dp, config_.adamw, s, seed);
  } else {
    optimizer_ = std::make_unique<AdamW>(*model_, config_.adamw);
  }
  if (sharded_ && sharded_->offloaded() && s.offloadOptimizer.pinMemory) {
    // Each bucket's gradients start for the host once final; under pipeline parallelism the
    // tied embedding's are final only after the stages' sum (sumTiedEmbedding), and its bucket
    // starts with the optimizer step. Only into pinned memory: a copy into pageable memory
    // returns when it is done, and would stop the rank's launches until the device caught up.
    const int tied = mesh_.pipeline().size() > 1 ? tiedEmbedding() : -1;
    const int held = tied < 0 ? -1 : layout.bucketOf[static_cast<std::size_t>(tied)];
    reducer_->setOnFinal([this, held](int b) {
      if (b != held) sharded_->gradientsFinal(b, reducer_->gradients(), reducer_->sharded());
    });
  }
}

std::int64_t Trainer::swapBytes() const {
  std::int64_t bytes = sharded_ ? sharded_->swapBytes() : 0;
  if (const ParameterSwap* swap = gatherer_ ? gatherer_->swap() : nullptr)
    bytes += swap->file().bytesRead() + swap->file().bytesWritten();
  return bytes;
}

double Trainer::reduceOverData(double value) {
  Communicator& dp = mesh_.data();
  if (dp.size() == 1) return value;
  auto v = static_cast<float>(value);
  dp.allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
  return v;
}

namespace {

// Written on the host and copied, wherever the gradient is.
void setInfinity(const Tensor& t) {
  const Tensor inf = Tensor::empty({1}, t.dtype(), MemoryCategory::Workspace);
  if (t.dtype() == DType::F32) {
    inf.data<float>()[0] = std::numeric_limits<float>::infinity();
  } else {
    inf.data<std::uint16_t>()[0] = t.dtype() == DType::BF16 ? 0x7f80 : 0x7c00;
  }
  t.slice(0, 1).copyFrom(inf);
}

}  // namespace

// inf or NaN anywhere in the reduced gradients, agreed by the data-parallel ranks (ZeRO-2/3's
// norm already sums every shard; all-reduced gradients are the same everywhere except when a
// fault is injected into one rank).
bool Trainer::overflowed(double gradNorm) {
  const bool mine = !std::isfinite(gradNorm);
  return reduceOverData(mine ? 1.0 : 0.0) > 0;
}

// After backward: the overflow check, clipping and the optimizer step (or skipping it).
void Trainer::update(StepReport& r, double gradNorm) {
  const double scale = scaler_.scale();
  r.lossScale = scale;
  r.gradNorm = gradNorm / scale;
  r.lr = learningRate(config_, steps_ - skipped_);
  r.skipped = scaler_.enabled() && overflowed(gradNorm);
  scaler_.update(r.skipped);
  if (r.skipped) {
    ++skipped_;
    return;
  }
  // Gradients are read unscaled: loss scales are powers of two, so dividing is exact.
  const double factor = kernels::clipFactor(r.gradNorm, config_.gradientClipping) / scale;
  const auto start = std::chrono::steady_clock::now();
  double gatherWait = 0;
  if (sharded_) {
    gatherWait = sharded_->step(r.lr, factor, reducer_->gradients(), reducer_->sharded());
    r.exposedCommSeconds += gatherWait;
  } else {
    optimizer_->step(r.lr, factor);
  }
  model_->ops().synchronize();  // a device's update ends when its kernels have run
  r.optimizerSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - gatherWait;
}

StepReport Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  trace::Context context = trace::context();
  // Numbered from 1, as the step reports, the Log, Compare and the CLI number steps.
  context.step = steps_ + 1;
  const trace::ScopedContext scoped(context);
  const trace::Span span("train_step", trace::Category::Step, trace::lane::kHost);
  const std::shared_ptr<void> stream = model_->ops().enter();
  model_->releaseValues();
  if (gatherer_) {
    gatherer_->releaseAll();
    gatherer_->takeWaitSeconds();  // evaluation's waits are not this step's
  }
  if (region_) region_->takeCommSeconds();  // nor its tensor-parallel communication
  const std::int64_t swappedBefore = swapBytes();
  // The disk starts on what this step reads first: the first layers' parameters and the first
  // sub-groups of the optimizer's state.
  if (gatherer_) gatherer_->readAheadForward();
  if (sharded_) sharded_->prefetchState();
  const TrainConfig& c = config_;
  const std::int64_t targetsPerStep =
      static_cast<std::int64_t>(c.globalBatch) * dataset_->targetsPerSample();
  StepReport r;
  if (reducer_) {
    reducer_->beginStep();
  } else {
    model_->startGradients();
  }
  // Micro-batch k covers global samples [k, k + 1) x micro x dp of the step; rank d takes the
  // d-th micro-batch of them, so ranks and micro-batches together cover the global batch once.
  const int dp = mesh_.data().size(), d = mesh_.data().rank();
  const auto lossScale = static_cast<float>(scaler_.scale());
  auto batches = [&](int k) {
    const std::int64_t first = static_cast<std::int64_t>(steps_) * c.globalBatch +
                               (static_cast<std::int64_t>(k) * dp + d) * c.microBatch;
    const trace::Span load("data_load", trace::Category::DataLoad, trace::lane::kData);
    Batch b = hostBatch(Split::Train, first, c.microBatch);
    b.lossWeight = lossScale / static_cast<float>(targetsPerStep);
    return b;
  };
  const StepStats stats = executor_->run(batches, [&] {
    // Before anything reads the gradients: the tied embedding's sum, a fault, the observer, the
    // norm and the update.
    model_->settleGradients();
    // Waiting for activations and gradients is the pipeline's idle time; the tied embedding's
    // exchange is communication nothing hides.
    r.exposedCommSeconds += sumTiedEmbedding();
    if (std::find(faultSteps_.begin(), faultSteps_.end(), steps_) != faultSteps_.end()) {
      setInfinity(reducer_ ? reducer_->gradients() : model_->parameters().front().storedGrad());
    }
    if (gradientObserver_) gradientObserver_(*this);
    if (gatherer_) gatherer_->releaseAll();  // no gathered copy outlives the update
    // The tied embedding's gradient counts once, on the first stage.
    const bool copy = mesh_.pipeline().size() > 1 && !executor_->holdsFirstStage();
    update(r, globalGradientNorm(*model_, reducer_.get(), mesh_, copy ? tiedEmbedding() : -1));
  });
  r.exposedCommSeconds += stats.reduceWaitSeconds;
  const double lossSum = reduceOverData(stats.lossSum);
  if (gatherer_) r.exposedCommSeconds += gatherer_->takeWaitSeconds();
  r.swapBytes = swapBytes() - swappedBefore;
  if (region_) r.exposedCommSeconds += region_->takeCommSeconds();
  ++steps_;
  r.step = steps_;
  r.totalSteps = c.trainIters;
  r.loss = lossSum / static_cast<double>(targetsPerStep);
  r.samples = c.globalBatch;
  r.tokens = targetsPerStep;
  if (c.pipeline.enabled) {
    r.pipelineBusySeconds = stats.busySeconds;
    r.pipelineIdleSeconds = stats.idleSeconds();
  }
  model_->ops().synchronize();  // a device's step ends when its last kernel has run
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// A model on a device reads its batch there: built in host memory, checked and copied.
Batch Trainer::hostBatch(Split split, std::int64_t first, int rows) {
  if (model_->allocator().device().kind == Device::Kind::Cpu)
    return dataset_->batch(split, first, rows, model_->allocator());
  return uploadBatch(dataset_->batch(split, first, rows, defaultAllocator()), config_.model.gpt,
                     model_->allocator());
}

int Trainer::tiedEmbedding() const {
  const auto& params = model_->parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].name == "wte.weight") return static_cast<int>(i);
  return -1;
}

// The embedding (first stage) and the head (last stage) each hold a copy of the tied wte; their
// gradients are summed so that both copies take the same update (as Megatron does). The step's
// transfers between the two ranks are all received by now, so this exchange is the next message
// on the pair. With ZeRO-2 / 3 a rank holds only its shard of the reduced gradient, and the two
// stages' flat layouts place wte differently, so each rank rebuilds the stage's whole reduced wte
// gradient first (an all-reduce of the parts, each rank contributing its own and zeros: exact),
// exchanges that, and keeps its own part of the sum: the same sum as without sharding.
double Trainer::sumTiedEmbedding() {
  Communicator& pipe = mesh_.pipeline();
  const PipelineShape& shape = executor_->setup().shape;
  const int last = shape.rankOf(shape.virtualStages() - 1);
  if (pipe.size() == 1 || !(executor_->holdsFirstStage() || executor_->holdsLastStage())) return 0;
  const int tied = tiedEmbedding();
  if (tied < 0) return 0;
  const auto start = std::chrono::steady_clock::now();
  Parameter& wte = model_->parameters()[static_cast<std::size_t>(tied)];
  const int peer = executor_->holdsFirstStage() ? last : 0;
  const auto n = static_cast<std::size_t>(wte.numel());
  const trace::Span span("tied_embedding_sum", trace::Category::Communication,
                         trace::lane::kCommunication);
  const DType type = wte.storage;
  const bool sharded = reducer_ != nullptr && reducer_->sharded();
  FlatLayout::Part part;
  Tensor grad;
  if (sharded) {
    Communicator& dp = mesh_.data();
    part = reducer_->layout().partOf(tied, wte.numel(), dp.rank());
    grad = Tensor::zeros({wte.numel()}, type, MemoryCategory::CommBuffer, model_->allocator());
    if (part.count > 0)
      grad.slice(part.local, part.count)
          .copyFrom(reducer_->gradients().slice(part.shard, part.count));
    dp.allReduce(grad.raw(), grad.raw(), n, type, ReduceOp::Sum);
  } else {
    grad = wte.storedGrad();
  }
  Tensor theirs = Tensor::empty(wte.shape, type, MemoryCategory::CommBuffer, model_->allocator());
  CommHandle sent = pipe.sendAsync(grad.raw(), n, type, peer);
  pipe.recv(theirs.raw(), n, type, peer);
  sent.wait();
  // a + b == b + a, and under mixed precision round(a + b) == round(b + a): both copies agree.
  // Through the model's kernels, on its device.
  const kernels::KernelOps& ops = model_->ops();
  if (type == DType::F32) {
    ops.accumulate(grad.raw(), theirs.raw(), wte.numel(), type);
  } else {
    Tensor wide =
        Tensor::empty(wte.shape, DType::F32, MemoryCategory::CommBuffer, model_->allocator());
    ops.widen(theirs.data<std::uint16_t>(), wide.data<float>(), wte.numel(), type);
    ops.accumulateRounded(grad.data<std::uint16_t>(), wide.data<float>(), wte.numel(), type);
  }
  if (sharded && part.count > 0)
    reducer_->gradients()
        .slice(part.shard, part.count)
        .copyFrom(grad.slice(part.local, part.count));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

EvalReport Trainer::evaluate() {
  // On the host lane beside the steps, not a step itself (Category::Step spans are what the
  // analyses count as steps).
  const trace::Span span("evaluate", trace::Category::Host, trace::lane::kHost);
  const std::shared_ptr<void> stream = model_->ops().enter();
  const int rows = config_.microBatch;
  const std::int64_t available = dataset_->samples(Split::Validation);
  // Classifiers: the whole test set once; text: eval_iters fixed windows (the same every time).
  const std::int64_t total = config_.evalIters == 0 || config_.model.kind->classifies()
                                 ? available
                                 : static_cast<std::int64_t>(config_.evalIters) * rows;
  // Data-parallel ranks take turns over the validation micro-batches and add up the results;
  // with ZeRO-3 every rank runs every batch, since each layer's gathers need all ranks.
  if (gatherer_) gatherer_->releaseAll();
  const int dp = gatherer_ ? 1 : mesh_.data().size(), d = gatherer_ ? 0 : mesh_.data().rank();
  std::vector<std::int64_t> firsts;
  for (std::int64_t first = static_cast<std::int64_t>(d) * rows; first < total;
       first += static_cast<std::int64_t>(dp) * rows) {
    firsts.push_back(first);
  }
  auto batches = [&](int k) {
    const std::int64_t first = firsts[static_cast<std::size_t>(k)];
    const int n = static_cast<int>(std::min<std::int64_t>(rows, total - first));
    return hostBatch(Split::Validation, first, n);
  };
  const MicroBatchResult m = executor_->evaluate(batches, static_cast<int>(firsts.size()));
  EvalReport r;
  r.step = steps_;
  double lossSum = m.lossSum;
  std::int64_t counts[2] = {m.correct, m.targets};
  if (dp > 1) {
    mesh_.data().allReduce(counts, counts, 2, DType::I64, ReduceOp::Sum);
    lossSum = reduceOverData(lossSum);
  }
  r.targets = counts[1];
  r.loss = r.targets ? lossSum / static_cast<double>(r.targets) : 0.0;
  r.accuracy = r.targets ? static_cast<double>(counts[0]) / static_cast<double>(r.targets) : 0.0;
  return r;
}

void Trainer::gatherParameters() {
  if (gatherer_) gatherer_->gatherAll();
  model_->materializeValues();
}

namespace {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Collective over a pipeline group: every stage's logical values (`mine`) arrive at stage 0,
// each tensor once (the tied embedding lives on the first and the last stage with equal
// values), in stage order, which is model order. A stage sends a JSON header of names and
// shapes, then all its values as one f32 buffer.
NamedTensors collectStages(NamedTensors mine, Communicator& pipeline, Allocator& allocator) {
  if (pipeline.rank() > 0) {
    nlohmann::json header = nlohmann::json::array();
    std::int64_t total = 0;
    for (const auto& [name, t] : mine) {
      header.push_back({{"name", name}, {"shape", t.shape()}});
      total += t.numel();
    }
    std::string text = header.dump();
    text.resize((text.size() + 3) / 4 * 4, ' ');  // sent as i32 words
    const std::int64_t sizes[2] = {static_cast<std::int64_t>(text.size()), total};
    pipeline.send(sizes, 2, DType::I64, 0);
    pipeline.send(text.data(), text.size() / 4, DType::I32, 0);
    std::vector<float> values;
    values.reserve(static_cast<std::size_t>(total));
    for (const auto& [name, t] : mine)
      values.insert(values.end(), t.data<float>(), t.data<float>() + t.numel());
    pipeline.send(values.data(), values.size(), DType::F32, 0);
    return {};
  }
  for (int stage = 1; stage < pipeline.size(); ++stage) {
    std::int64_t sizes[2] = {0, 0};
    pipeline.recv(sizes, 2, DType::I64, stage);
    std::string text(static_cast<std::size_t>(sizes[0]), ' ');
    pipeline.recv(text.data(), text.size() / 4, DType::I32, stage);
    std::vector<float> values(static_cast<std::size_t>(sizes[1]));
    pipeline.recv(values.data(), values.size(), DType::F32, stage);
    const float* next = values.data();
    for (const nlohmann::json& entry : nlohmann::json::parse(text)) {
      const auto name = entry["name"].get<std::string>();
      Tensor t = Tensor::empty(entry["shape"].get<Shape>(), DType::F32, MemoryCategory::Workspace,
                               allocator);
      std::copy(next, next + t.numel(), t.data<float>());
      next += t.numel();
      const bool seen = std::any_of(mine.begin(), mine.end(),
                                    [&](const auto& held) { return held.first == name; });
      if (!seen) mine.emplace_back(name, std::move(t));
    }
  }
  return mine;
}

}  // namespace

void Trainer::saveWeights() {
  if (config_.saveWeights.empty()) return;
  gatherParameters();
  // Logical values: tensor-parallel parts assembled over the tensor group (collective).
  NamedTensors values;
  if (mesh_.tensor().size() > 1) {
    values = gatherParameterValues(*model_, mesh_.tensor());
  } else {
    for (const Parameter& p : model_->parameters()) values.emplace_back(p.name, p.value.onHost());
  }
  // Every stage's first tensor and data rank holds its layers' values; the pipeline group
  // through world rank 0 brings them together there.
  const MeshCoordinates at = mesh_.coordinates();
  if (at.tensor != 0 || at.data != 0) return;
  if (mesh_.pipeline().size() > 1) {
    // Received into the host's memory, from which the file is written.
    Allocator& host = model_->allocator().device().kind == Device::Kind::Cpu ? model_->allocator()
                                                                             : defaultAllocator();
    values = collectStages(std::move(values), mesh_.pipeline(), host);
  }
  if (mesh_.world().rank() == 0) writeSafetensors(config_.saveWeights, values, {{"format", "pt"}});
}

namespace {

// Appends the slices of parameter p's local elements [begin, begin + count) (local row-major
// order), cut where its tensor-parallel part stops being contiguous in the logical tensor.
void addSlices(std::vector<StateSlice>& out, const Parameter& p, StateField field,
               std::int64_t begin, std::int64_t count, void* data, DType dtype, bool owned) {
  const std::int64_t end = begin + count;
  const std::size_t width = dtypeSize(dtype);
  forEachSplitRun(p.fullShape, p.split, [&](std::int64_t full, std::int64_t local, std::int64_t n) {
    const std::int64_t lo = std::max(begin, local), hi = std::min(end, local + n);
    if (lo >= hi) return;
    out.push_back({p.name, field, full + (lo - local), hi - lo,
                   static_cast<char*>(data) + static_cast<std::size_t>(lo - begin) * width, dtype,
                   owned});
  });
}

}  // namespace

void* Trainer::stateView(const Tensor& t) {
  if (t.device().kind == Device::Kind::Cpu) return t.raw();
  for (const auto& [device, host] : staged_) {  // one copy of a tensor per state()
    if (device.raw() == t.raw() && device.nbytes() == t.nbytes()) return host.raw();
  }
  return staged_.emplace_back(t, t.onHost()).second.raw();
}

void Trainer::stateWritten() {
  for (const auto& [device, host] : staged_) device.copyFrom(host);
  staged_.clear();
}

void Trainer::releaseState() {
  staged_.clear();
}

RankState Trainer::state() {
  staged_.clear();
  RankState s;
  s.tensors = logicalTensors(config_);
  s.counters.step = steps_;
  s.counters.skipped = skipped_;
  s.counters.nextSample = static_cast<std::int64_t>(steps_) * config_.globalBatch;
  s.counters.lossScale = scaler_.scale();
  s.counters.dynamicScale = scaler_.dynamic();
  s.counters.hysteresis = scaler_.hysteresis();
  s.counters.scalerIteration = scaler_.iteration();
  s.counters.lastOverflow = scaler_.lastOverflow();
  const MeshCoordinates at = mesh_.coordinates();
  auto& params = model_->parameters();
  // A parameter this rank holds a copy of that another rank saves: a whole tensor on tensor
  // ranks other than 0, or the tied embedding on a pipeline's last stage (stage 0 has it too).
  auto replica = [&](const Parameter& p) {
    return (p.split.whole() && at.tensor != 0) ||
           (at.pipeline != 0 && p.name == "wte.weight" && mesh_.pipeline().size() > 1);
  };
  const DType low = model_->computeType();
  const bool mixed = model_->mixedPrecision();
  if (optimizer_) {  // every parameter's whole local state; data rank 0's is the one saved
    for (std::size_t i = 0; i < params.size(); ++i) {
      Parameter& p = params[i];
      const bool owned = at.data == 0 && !replica(p);
      const std::int64_t n = p.numel();
      const Tensor master = mixed ? optimizer_->master(i) : p.value;
      addSlices(s.slices, p, StateField::Param, 0, n, stateView(master), DType::F32, owned);
      if (mixed) addSlices(s.slices, p, StateField::Param, 0, n, stateView(p.lowValue), low, false);
      addSlices(s.slices, p, StateField::ExpAvg, 0, n, stateView(optimizer_->expAvg(i)), DType::F32,
                owned);
      addSlices(s.slices, p, StateField::ExpAvgSq, 0, n, stateView(optimizer_->expAvgSq(i)),
                DType::F32, owned);
    }
    return s;
  }
  // ZeRO: this rank's segments of the flat space hold its moments (and master); the stored
  // parameters are the whole flat space, or with ZeRO-3 the same segments of the shard.
  sharded_->stageIn();  // a swapped state into memory until the next step (sharded_optimizer.h)
  const ShardedAdamW& z = *sharded_;
  auto f32 = [&](const Tensor& t, std::int64_t at) {
    return static_cast<float*>(stateView(t)) + at;
  };
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ownedRanges(params.size());
  for (const ShardedAdamW::Segment& seg : z.segments()) {
    Parameter& p = params[static_cast<std::size_t>(seg.parameter)];
    const bool owned = !replica(p);
    const std::int64_t local =
        seg.flatBegin - z.layout().offset[static_cast<std::size_t>(seg.parameter)];
    ownedRanges[static_cast<std::size_t>(seg.parameter)].emplace_back(local, seg.count);
    const float* master = mixed               ? f32(z.master(), seg.shardBegin)
                          : z.valuesSharded() ? f32(z.values(), seg.shardBegin)
                                              : f32(p.value, local);
    addSlices(s.slices, p, StateField::Param, local, seg.count, const_cast<float*>(master),
              DType::F32, owned);
    if (mixed && z.valuesSharded()) {
      addSlices(s.slices, p, StateField::Param, local, seg.count,
                static_cast<std::uint16_t*>(stateView(z.values())) + seg.shardBegin, low, false);
    }
    addSlices(s.slices, p, StateField::ExpAvg, local, seg.count,
              const_cast<float*>(f32(z.expAvg(), seg.shardBegin)), DType::F32, owned);
    addSlices(s.slices, p, StateField::ExpAvgSq, local, seg.count,
              const_cast<float*>(f32(z.expAvgSq(), seg.shardBegin)), DType::F32, owned);
  }
  if (z.valuesSharded()) return s;
  // ZeRO-1 / 2: the other ranks' segments of the stored parameters are held here too.
  for (std::size_t i = 0; i < params.size(); ++i) {
    Parameter& p = params[i];
    if (mixed) {
      addSlices(s.slices, p, StateField::Param, 0, p.numel(), stateView(p.lowValue), low, false);
      continue;
    }
    std::int64_t at = 0;
    auto& ranges = ownedRanges[i];
    std::sort(ranges.begin(), ranges.end());
    ranges.emplace_back(p.numel(), 0);
    for (const auto& [begin, count] : ranges) {
      if (begin > at)
        addSlices(s.slices, p, StateField::Param, at, begin - at, f32(p.value, at), DType::F32,
                  false);
      at = begin + count;
    }
  }
  return s;
}

void Trainer::restoreCounters(const TrainingCounters& c) {
  steps_ = c.step;
  skipped_ = c.skipped;
  // From fp32, bf16 or a static scale the saved scale is no dynamic scaler's: this run's own
  // start stands (a scale of 1 carried into fp16 would override initial_scale_power).
  if (scaler_.dynamic() && c.dynamicScale) {
    scaler_.restore(c.lossScale, c.hysteresis, c.scalerIteration, c.lastOverflow);
  }
  const int updates = c.step - c.skipped;
  if (optimizer_) optimizer_->setSteps(updates);
  if (sharded_) sharded_->setSteps(updates);
}

}  // namespace parascope
