// Session: the layouts' rank loops, switches between them, checkpoints, reports, and failure
// handling.
#include "core/session/session.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <new>

#include "core/comm/launch.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/stop_signal.h"
#include "core/offload/aio_file.h"
#include "core/plan/memory_estimate.h"
#include "core/session/rank_hooks.h"
#include "core/session/run_summary.h"
#include "core/session/switch_rule.h"
#include "core/state/checkpoint.h"
#include "core/trace/trace.h"

#if PARASCOPE_HAVE_CUDA
#include "core/cuda/device.h"
#include "core/cuda/device_buffers.h"
#include "core/cuda/device_memory.h"
#include "core/cuda/gemm_peak.h"
#include "core/cuda/kernels.h"
// The ranks allowed on one GPU are the sources a device reduction takes.
static_assert(parascope::kMaxGpuRanks <= parascope::cuda::kMaxReduceBuffers);
#endif

namespace parascope {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The swap directories, probed before any rank starts (aio_file.h): every swap file of this
// machine's ranks must fit in its directory (both tiers' together where they share one), and a
// parameter buffer must hold a rank's part of the largest bucket.
void checkSwap(const TrainConfig& c, const MemoryEstimate& e) {
  const ParallelStrategy& s = c.parallel;
  if (s.swapsParameters() && e.largestParameterPart > s.paramBufferElements) {
    throw UserError(
        "zero_optimization.offload_param.buffer_size = " + std::to_string(s.paramBufferElements) +
        " elements cannot hold a rank's part of ZeRO-3's largest bucket, " +
        std::to_string(e.largestParameterPart) +
        " elements (a layer's parameters over the data-parallel ranks); valid: " +
        std::to_string(e.largestParameterPart) + " or more");
  }
  const double ranks = e.ranksSharingMemory;
  const double parameters = e.parameterSwapBytes * ranks;
  const double optimizer = (e.swapBytes - e.parameterSwapBytes) * ranks;
  std::error_code ec;
  const bool shared =
      s.swapsOptimizer() && s.swapsParameters() &&
      (s.offloadOptimizer.nvmePath == s.offloadParam.nvmePath ||
       std::filesystem::equivalent(s.offloadOptimizer.nvmePath, s.offloadParam.nvmePath, ec));
  if (s.swapsOptimizer()) {
    checkSwapDirectory(s.offloadOptimizer.nvmePath, "zero_optimization.offload_optimizer.nvme_path",
                       shared ? optimizer + parameters : optimizer, s.aio);
  }
  if (s.swapsParameters() && !shared) {
    checkSwapDirectory(s.offloadParam.nvmePath, "zero_optimization.offload_param.nvme_path",
                       parameters, s.aio);
  }
}

// memory_limit_bytes against the estimate of a rank's tracked memory. Over it, the message says
// whether swapping the optimizer's state to a disk (with ZeRO-1 where the run has no ZeRO) would
// fit, and under ZeRO-3 where that is not enough whether swapping the parameters too would, with
// the config's sub-group size or the largest power of ten below it that fits (the buffers shrink
// with the sub-groups), and what it would then need.
void checkMemoryLimit(const TrainConfig& c, const MemoryEstimate& e) {
  const auto limit = static_cast<double>(c.memoryLimitBytes);
  if (limit <= 0 || e.trackedBytes() <= limit) return;
  TrainConfig swapped = c;
  ParallelStrategy& s = swapped.parallel;
  std::vector<std::string> keys;
  if (s.zeroStage == 0) {
    s.zeroStage = 1;
    keys.emplace_back("zero_optimization.stage=1");
  }
  const std::int64_t own = s.subGroupElements;
  double need = e.trackedBytes();
  bool fits = false;
  // The largest sub-group size (the config's, then powers of ten down to 1000) that fits.
  const auto search = [&] {
    for (std::int64_t size = own; size >= 1000;) {
      s.subGroupElements = size;
      need = estimateMemory(swapped, 0, 1).trackedBytes();
      if (need <= limit) return true;
      std::int64_t next = 1;
      while (next * 10 < size) next *= 10;
      size = next;
    }
    return false;
  };
  if (!s.swapsOptimizer()) {
    s.offloadOptimizer.device = OffloadDevice::Nvme;
    keys.emplace_back("zero_optimization.offload_optimizer.device=nvme (with its nvme_path)");
    fits = search();
  }
  if (!fits && s.zeroStage == 3 && !s.swapsParameters()) {
    s.offloadParam.device = OffloadDevice::Nvme;
    keys.emplace_back("zero_optimization.offload_param.device=nvme (with its nvme_path)");
    fits = search();
  }
  std::string fix;
  if (!keys.empty() && (s.swapsOptimizer() != c.parallel.swapsOptimizer() ||
                        s.swapsParameters() != c.parallel.swapsParameters())) {
    if (s.subGroupElements != own)
      keys.push_back("zero_optimization.sub_group_size=" + std::to_string(s.subGroupElements));
    std::string list;
    for (std::size_t i = 0; i < keys.size(); ++i)
      list += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
    fix = fits ? "; with " + list + " it needs " + formatBytes(need) + ", which fits"
               : "; with " + list + " it would still need " + formatBytes(need);
  }
  throw UserError("memory_limit_bytes: a rank of this run needs about " +
                  formatBytes(e.trackedBytes()) + " (largest: " + e.largest().name +
                  "), over its limit of " + formatBytes(limit) + fix +
                  (fits ? ""
                        : "; raise the limit, or use more ranks, a higher ZeRO stage, a smaller "
                          "micro-batch or recompute"));
}

void barrier(Communicator& world) {
  int token = 0;
  if (world.size() > 1) world.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);
}

// Every rank's text at rank 0 (in rank order; empty elsewhere), over point-to-point messages.
std::vector<std::string> gatherText(Communicator& world, std::string mine) {
  mine.resize((mine.size() + 3) / 4 * 4, ' ');  // sent as i32 words
  if (world.rank() != 0) {
    const auto size = static_cast<std::int64_t>(mine.size());
    world.send(&size, 1, DType::I64, 0);
    world.send(mine.data(), mine.size() / 4, DType::I32, 0);
    return {};
  }
  std::vector<std::string> all{std::move(mine)};
  for (int r = 1; r < world.size(); ++r) {
    std::int64_t size = 0;
    world.recv(&size, 1, DType::I64, r);
    std::string text(static_cast<std::size_t>(size), ' ');
    world.recv(text.data(), text.size() / 4, DType::I32, r);
    all.push_back(std::move(text));
  }
  return all;
}

// Rank 0's text on every rank.
std::string broadcastText(Communicator& world, std::string text) {
  auto size = static_cast<std::int64_t>(text.size());
  world.broadcast(&size, 1, DType::I64, 0);
  text.resize(static_cast<std::size_t>(size + 3) / 4 * 4, ' ');  // sent as i32 words
  world.broadcast(text.data(), text.size() / 4, DType::I32, 0);
  text.resize(static_cast<std::size_t>(size));
  return text;
}

// The checkpoint's data position must be this config's. Needs no model: checked before any rank
// starts.
void checkLoadableCounters(const CheckpointReader& reader, const TrainConfig& config) {
  const CheckpointManifest& m = reader.manifest();
  const std::string where = "checkpoint " + reader.directory() + ": ";
  const std::int64_t expected = static_cast<std::int64_t>(m.counters.step) * config.globalBatch;
  if (m.counters.nextSample != expected) {
    const std::int64_t steps = m.counters.step;
    if (steps > 0 && m.counters.nextSample % steps == 0) {
      const std::int64_t saved = m.counters.nextSample / steps;
      throw UserError(where + "was saved with a global batch of " + std::to_string(saved) +
                      " samples but this config's is " + std::to_string(config.globalBatch) +
                      "; load it with train_batch_size=" + std::to_string(saved));
    }
    // No one batch gives its position (a manifest edited, or steps of several batch sizes).
    throw UserError(where + "is at sample " + std::to_string(m.counters.nextSample) + " after " +
                    std::to_string(steps) +
                    " steps, which no global batch reaches (this "
                    "config's " +
                    std::to_string(config.globalBatch) + " would be at sample " +
                    std::to_string(expected) + ")");
  }
  if (m.counters.step > config.trainIters) {
    throw UserError(where + "is at step " + std::to_string(m.counters.step) +
                    " but train_iters is " + std::to_string(config.trainIters) +
                    " (train_iters counts all steps, the saved ones included)");
  }
}

}  // namespace

Session::Session(TrainConfig config, SessionOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      gate_(/*shared=*/!options_.world.has_value()) {}

Session::~Session() {
  if (thread_.joinable()) {
    gate_.stop();
    thread_.join();
  }
}

void Session::addObserver(SessionObserver& observer) {
  observers_.push_back(&observer);
}

SessionState Session::state() const {
  const SessionState s = state_.load();
  return s == SessionState::Running && gate_.paused() ? SessionState::Paused : s;
}

TrainConfig Session::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

std::optional<ErrorReport> Session::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

TrainConfig Session::resolveSwitch(const nlohmann::json& requested, bool batchNamed) const {
  TrainConfig next;
  try {
    next = parascope::resolveSwitch(config(), requested, batchNamed,
                                    options_.world ? options_.world->size() : 0);
  } catch (const UserError& e) {
    throw UserError(std::string("switch: ") + e.what());
  }
  checkSwitch(next);
  return next;
}

// What a switch may change is how the run is spread; what it trains on and how must stay.
void Session::checkSwitch(const TrainConfig& next) const {
  try {
    checkTrainable(next);
    checkSwitchKeeps(config(), next);
  } catch (const UserError& e) {
    throw UserError(std::string("switch: ") + e.what());
  }
  if (options_.world && next.parallel.worldSize() != options_.world->size()) {
    throw UserError(
        "switch: under MPI the layout changes over the same " +
        std::to_string(options_.world->size()) + " processes, but the new strategy has " +
        std::to_string(next.parallel.worldSize()) + " ranks; choose degrees whose product is " +
        std::to_string(options_.world->size()));
  }
  try {
    const MemoryEstimate estimate =
        estimateMemory(next, dataBytesInMemory(next.data), next.parallel.worldSize());
    checkMemory(estimate, onGpu() ? gpuMemoryBytes() : availableMemoryBytes());
    checkHostMemory(estimate, availableMemoryBytes());
    checkSwap(next, estimate);
    checkMemoryLimit(next, estimate);
    if (!options_.world && !onGpu()) {
      checkAddressSpace(estimate, next.parallel.worldSize(), availableAddressSpaceBytes());
    }
  } catch (const UserError& e) {
    throw UserError("switch to " + describeStrategy(next) + ": " + e.what());
  }
}

void Session::switchStrategy(const TrainConfig& next) {
  checkSwitch(next);
  const SessionState s = state_.load();
  if (s == SessionState::Finished || s == SessionState::Stopped || s == SessionState::Failed) {
    throw UserError("switch: the session has ended");
  }
  {
    std::lock_guard lock(mutex_);
    if (s == SessionState::Idle) {  // not started: simply the config to start with
      config_ = next;
      return;
    }
    pending_ = next;
  }
  gate_.requestSwitch();
}

void Session::saveCheckpoint(const std::string& dir) {
  if (dir.empty()) throw UserError("save checkpoint: the directory is empty");
  {
    std::lock_guard lock(mutex_);
    saveDir_ = dir;
  }
  gate_.requestSave();
}

// An allocation that failed although the run was checked against the memory available at its
// start (another process took memory since, or the estimate missed something): the library's
// "std::bad_alloc" says neither how much the run needs nor what to change.
std::string Session::outOfMemoryReason(bool mpi) const {
  const std::string change =
      "; free memory, or use a smaller model or micro-batch, more ranks, a higher ZeRO stage or "
      "recompute";
  if (config_.memoryLimitBytes > 0) {
    return "out of memory: an allocation would have passed memory_limit_bytes (" +
           formatBytes(static_cast<double>(config_.memoryLimitBytes)) +
           ") on a rank; raise the limit, or swap the optimizer's state to a disk, use more "
           "ranks, a higher ZeRO stage, a smaller micro-batch or recompute";
  }
  try {
    const MemoryEstimate e = runEstimate(mpi);
    const double available = availableMemoryBytes();
    return "out of memory: an allocation failed in a run estimated at about " +
           formatBytes(e.totalBytes()) + " (" +
           (e.ranksSharingMemory > 1
                ? std::to_string(e.ranksSharingMemory) + " ranks x " + formatBytes(e.perRankBytes())
                : std::string("one rank")) +
           "; largest: " + e.largest().name + ")" +
           (available >= 0 ? ", with " + formatBytes(available) + " available now" : "") + change;
  } catch (const std::bad_alloc&) {
    return "out of memory: an allocation failed" + change;  // too little left to say more
  }
}

void Session::recordFailure(int rank, const std::exception& e) {
  const bool outOfMemory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
  const std::string reason = outOfMemory ? outOfMemoryReason(options_.world.has_value()) : e.what();
  {
    std::lock_guard lock(mutex_);
    if (!error_) {
      error_ = ErrorReport{rank, reason, dynamic_cast<const UserError*>(&e) != nullptr};
    }
  }
  // Ranks held at a step boundary by this rank's absence fail too (communication already
  // fails them through the communicator).
  gate_.fail(reason);
}

// Collective over the world. Rank 0 prepares the staging directory; every rank writes the slices
// it owns; rank 0 writes the manifest with every rank's and commits.
void Session::saveState(Communicator& world, Trainer& trainer, const std::string& dir) {
  const auto start = Clock::now();
  const trace::Span span("checkpoint_save", trace::Category::Step, trace::lane::kHost);
  const int step = trainer.stepsDone();
  // A save into a directory other than --save's (the workbench's Save) locks it for its length.
  std::optional<CheckpointLock> lock;
  if (world.rank() == 0) {
    if (dir != options_.saveDir) lock.emplace(dir);
    saving_.emplace(dir, step);
    prepareCheckpoint(dir, step);
  }
  barrier(world);
  const RankState state = trainer.state();
  std::vector<StateSlice> owned;
  for (const StateSlice& s : state.slices) {
    if (s.owned) owned.push_back(s);
  }
  const ShardWritten written = writeShard(stagingDirectory(dir, step), world.rank(), owned);
  trainer.releaseState();
  // Each rank's shard travels to rank 0 as a manifest of its own.
  CheckpointManifest mine;
  mine.files.push_back(written.file);
  mine.slices = written.slices;
  const std::vector<std::string> shards = gatherText(world, manifestToJson(mine).dump());
  if (world.rank() == 0) {
    CheckpointManifest m;
    m.config = trainer.config().document;
    m.counters = state.counters;
    m.tensors = state.tensors;
    std::int64_t bytes = 0;
    for (const std::string& text : shards) {
      const CheckpointManifest shard = manifestFromJson(nlohmann::json::parse(text), "shard");
      addShard(m, {shard.files.front(), shard.slices});
    }
    for (const CheckpointFile& f : m.files) bytes += f.bytes;
    const std::string path = commitCheckpoint(dir, step, std::move(m), options_.keep);
    saving_.reset();
    {
      std::lock_guard lock(mutex_);
      lastCheckpoint_ = path;
    }
    const CheckpointReport r{step, path, false, millisecondsSince(start), bytes};
    publish([&](SessionObserver& o) { o.onCheckpoint(r); });
  }
  barrier(world);  // no rank runs on (or saves again) before the commit
}

// The rank's trainer for this layout: the state of the layout before a switch, a checkpoint's,
// or freshly initialised.
Trainer& Session::buildTrainer(Communicator& world, RankSlot& slot, const TrainConfig& config) {
  if (switching_) {
    const trace::Span span("strategy_switch", trace::Category::Step, trace::lane::kHost);
    slot.trainer = std::make_unique<Trainer>(config, *slot.allocator, world, false);
    if (options_.world) {
      // The same processes, other slices: point-to-point transfers of what each rank lacks.
      std::int64_t bytes[2] = {reshardOver(world, retiring_.front().trainer->state(),
                                           slot.trainer->state(), *slot.allocator),
                               pages().reusedBytes() - switchReusedFrom_};
      world.allReduce(bytes, bytes, 2, DType::I64, ReduceOp::Sum);
      switchBytes_ = bytes[0];
      switchReused_ = bytes[1];
    } else {
      switchBytes_ += copyState(*switchIndex_, slot.trainer->state());
    }
    slot.trainer->stateWritten();
    slot.trainer->restoreCounters(switchCounters_);
    barrier(world);  // every rank has copied: the old layout can go
    if (world.rank() == 0 || options_.world) {
      SwitchReport r;
      r.step = slot.trainer->stepsDone();
      r.before = describeStrategy(switchFrom_);
      r.after = describeStrategy(config);
      r.from = switchFrom_;
      r.to = config;
      r.worldBefore = switchFrom_.parallel.worldSize();
      r.worldAfter = world.size();
      r.milliseconds = millisecondsSince(switchStart_);
      r.bytesMoved = switchBytes_.load();
      r.bytesReused = options_.world ? switchReused_ : pages().reusedBytes() - switchReusedFrom_;
      // The new layout could run from here; freeing the old one is not part of the switch.
      retiring_.clear();
      switchIndex_.reset();
      switching_ = false;
      pages().setHugePages(true);
      publish([&](SessionObserver& o) { o.onSwitch(r); });
    }
    barrier(world);  // no rank goes on before the old layout is freed
    return *slot.trainer;
  }
  if (loading_ && !started_) {
    const CheckpointReader& reader = *loading_;
    slot.trainer = std::make_unique<Trainer>(config, *slot.allocator, world, false);
    RankState state = slot.trainer->state();
    // The model's shapes as built (an MLP's input is its dataset's); with shapes known from the
    // config alone this was checked before any rank started.
    checkCheckpointTensors(reader.manifest(), state.tensors, "checkpoint " + reader.directory());
    // The load is the reading: building the layout is what starting any run costs.
    if (!options_.world) barrier(world);
    const auto start = Clock::now();
    const trace::Span span("checkpoint_load", trace::Category::Step, trace::lane::kHost);
    std::int64_t bytes = 0;
    for (const StateSlice& s : state.slices) {
      reader.read(s);
      bytes += s.count * static_cast<std::int64_t>(dtypeSize(s.dtype));
    }
    slot.trainer->stateWritten();
    slot.trainer->restoreCounters(reader.manifest().counters);
    // In-process the report counts every rank's bytes; under MPI each process reports its own.
    loadBytes_ += bytes;
    if (!options_.world) barrier(world);
    if (world.rank() == 0 || options_.world) {
      // Every read of this process has returned: the checksums now. A mismatch fails this rank
      // before any step, and with it the run.
      reader.finishChecks();
      const CheckpointReport r{slot.trainer->stepsDone(), reader.directory(), true,
                               millisecondsSince(start), loadBytes_.load()};
      publish([&](SessionObserver& o) { o.onCheckpoint(r); });
    }
    return *slot.trainer;
  }
  // init_weights: opened for the first layout only (a switch copies the running state).
  const bool fromFile = initWeights_ != nullptr;
  slot.trainer = std::make_unique<Trainer>(config, *slot.allocator, world, !fromFile);
  if (fromFile) {
    loadInitialWeights(*initWeights_, slot.trainer->state());
    slot.trainer->stateWritten();
  }
  return *slot.trainer;
}

Session::Ending Session::trainRank(Communicator& world, RankSlot& slot) {
  const trace::ScopedContext traced({.rank = world.rank()});  // the rank of this thread's events
  const TrainConfig config = this->config();
  // Read before the first collective: rank 0 moves it on at a switch, possibly before a slower
  // peer got here.
  const int firstBoundary = boundary_;
  Allocator& allocator = *slot.allocator;
  Trainer& trainer = buildTrainer(world, slot, config);
  static const RankHooks none;
  const RankHooks& hooks = options_.rankHooks ? *options_.rankHooks : none;
  if (hooks.gradients) trainer.setGradientObserver(hooks.gradients);
  if (hooks.built) hooks.built(trainer);
  // In-process, rank 0 speaks for the world; under MPI each process reports its own rank's view
  // (the losses are global means, the same on every rank).
  const bool speaks = world.rank() == 0 || options_.world.has_value();
  if (speaks && !started_) {
    StartReport s;
    s.config = config;
    s.model = describeModel(config, trainer.model());
    s.data = trainer.dataset().describe();
    s.parameters = modelParameters(config, trainer.model());
    s.flopsPerToken = modelFlopsPerToken(config);
    s.worldSize = world.size();
    s.firstStep = trainer.stepsDone();
    s.deviceName = deviceName_;
    s.devicePeakFlops = devicePeakFlops_;
    publish([&](SessionObserver& o) { o.onStart(s); });
  }
  const bool canEvaluate = options_.evaluate && trainer.dataset().samples(Split::Validation) > 0;
  EvalReport last;
  Ending ending = Ending::Done;
  int savedAt = -1;  // the step of this layout's last checkpoint
  for (int boundary = firstBoundary; trainer.stepsDone() < config.trainIters; ++boundary) {
    // A step boundary is the safe point for SIGINT / SIGTERM (core/common/stop_signal.h): the
    // run ends as failed, so nothing half-done (weights, trace) is written.
    throwIfStopRequested();
    const GateAction action = gate_.next(world, boundary);
    if (action == GateAction::Stop) {
      ending = Ending::Stopped;
      break;
    }
    if (action == GateAction::Switch) {
      if (options_.world) {
        // Rank 0 decided; its target is every process's.
        std::string target;
        if (world.rank() == 0) {
          std::lock_guard lock(mutex_);
          target = pending_.value().document.dump();
        }
        target = broadcastText(world, target);
        TrainConfig next = parseTrainConfig(nlohmann::json::parse(target), world.size());
        std::lock_guard lock(mutex_);
        pending_ = std::move(next);
      }
      if (world.rank() == 0 || options_.world) {
        switchStart_ = Clock::now();
        boundary_ = boundary + 1;
      }
      return Ending::Switch;
    }
    if (action == GateAction::Save) {
      std::string dir;
      {
        std::lock_guard lock(mutex_);
        dir = saveDir_;
      }
      if (options_.world) dir = broadcastText(world, dir);
      saveState(world, trainer, dir);
      savedAt = trainer.stepsDone();
      continue;
    }
    allocator.resetPeaks();  // so the report's peaks are this step's
    StepReport r = trainer.step();
    if (hooks.stepped) hooks.stepped(trainer);
    r.rank = world.rank();
    r.pipelineRank = trainer.mesh().coordinates().pipeline;
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      r.peakBytes[c] = allocator.peakBytes(static_cast<MemoryCategory>(c));
    }
    publish([&](SessionObserver& o) { o.onRankStep(r); });
    if (speaks) publish([&](SessionObserver& o) { o.onStep(r); });
    const int done = trainer.stepsDone();
    const bool due = config.evalInterval > 0 && done % config.evalInterval == 0;
    if (canEvaluate && (due || done == config.trainIters)) {
      last = trainer.evaluate();
      if (speaks) publish([&](SessionObserver& o) { o.onEval(last); });
    }
    if (!options_.saveDir.empty() && options_.saveInterval > 0 &&
        done % options_.saveInterval == 0) {
      saveState(world, trainer, options_.saveDir);
      savedAt = done;
    }
  }
  if (!options_.saveDir.empty() && savedAt != trainer.stepsDone()) {
    saveState(world, trainer, options_.saveDir);
  }
  trainer.saveWeights();
  if (hooks.finished) hooks.finished(trainer);
  if (speaks) {
    std::lock_guard lock(mutex_);
    result_.steps = trainer.stepsDone();
    result_.stopped = ending == Ending::Stopped;
    result_.lastEval = last;
    result_.weightsPath = config.saveWeights;
  }
  return ending;
}

// The run's memory on this machine: every in-process rank, or under MPI this node's ranks.
MemoryEstimate Session::runEstimate(bool mpi) const {
  const int sharing = mpi ? mpiRanksOnThisNode() : config_.parallel.worldSize();
  return estimateMemory(config_, dataBytesInMemory(config_.data), sharing);
}

// What can be refused without any work is refused before any rank allocates: an output path
// that cannot be written, and a run that cannot fit in this machine's memory (the estimate of
// core/plan/memory_estimate.h, times the ranks sharing the machine). Every rank checks the
// same config, so under MPI all refuse together.
void Session::checkBeforeStart(bool mpi) const {
  checkTrainable(config_);
  if (onGpu()) {
    // A GPU run's ranks are one process's, sharing its device.
    if (mpi)
      throw UserError("config: device \"cuda\" runs in one process so far, not under mpirun");
#if PARASCOPE_HAVE_CUDA
    if (cuda::deviceCount() <= config_.device.index)
      throw UserError("config: device \"cuda\": no CUDA device is visible (" + cuda::whyNoDevice() +
                      ")");
#endif
  }
  if (!config_.saveWeights.empty()) {
    checkOutputPath(config_.saveWeights, "save_weights",
                    {{"init_weights", config_.initWeights}, {"--load", options_.load}});
  }
  const MemoryEstimate estimate = runEstimate(mpi);
  // A GPU run's tensors are in the device's memory, not the host's.
  checkMemory(estimate, onGpu() ? gpuMemoryBytes() : availableMemoryBytes());
  checkHostMemory(estimate, availableMemoryBytes());
  checkSwap(config_, estimate);
  checkMemoryLimit(config_, estimate);
  if (onGpu()) return;
  // The address-space limit is this process's: its own ranks' threads (one under MPI).
  MemoryEstimate own = estimate;
  own.ranksSharingMemory = mpi ? 1 : estimate.ranksSharingMemory;
  checkAddressSpace(own, own.ranksSharingMemory, availableAddressSpaceBytes());
}

double Session::gpuMemoryBytes() const {
#if PARASCOPE_HAVE_CUDA
  const std::vector<cuda::DeviceInfo> devices = cuda::visibleDevices();
  const auto i = static_cast<std::size_t>(config_.device.index);
  if (i < devices.size()) return static_cast<double>(devices[i].memoryBytes);
#endif
  return -1;  // unknown: checkMemory checks nothing
}

// n = 8192 as `bench gpu` measures it; about 0.2 s on an H100, before the run allocates there.
void Session::measureDevicePeak() {
#if PARASCOPE_HAVE_CUDA
  const int i = config_.device.index;
  deviceName_ = cuda::visibleDevices().at(static_cast<std::size_t>(i)).name;
  devicePeakFlops_ = cuda::productPeak(i, cuda::productsFor(config_.parallel.compute));
#endif
}

void Session::runRank(Communicator& world, RankSlot& slot) {
  try {
    const Ending e = trainRank(world, slot);
    if (world.rank() == 0 || options_.world) ending_ = e;
  } catch (const std::exception& e) {
    recordFailure(world.rank(), e);
    throw;  // so the in-process world fails the peers' pending operations at once
  }
}

// The rank's for the whole run: the layouts before and after a switch count into one.
std::shared_ptr<RankMemoryTrack> Session::memoryTrack(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (memoryTracks_.size() <= r) memoryTracks_.resize(r + 1);
  if (!memoryTracks_[r]) memoryTracks_[r] = std::make_shared<RankMemoryTrack>(rank);
  return memoryTracks_[r];
}

PagePool& Session::pages() const {
  return options_.world && options_.allocator ? options_.allocator->pages() : *pages_;
}

bool Session::onGpu() const {
  return config_.device.kind != Device::Kind::Cpu;
}

// A rank's memory: the host's, sharing the session's page pool, or the GPU's.
std::unique_ptr<Allocator> Session::makeAllocator() const {
#if PARASCOPE_HAVE_CUDA
  if (onGpu()) return std::make_unique<Allocator>(cuda::deviceMemory(config_.device.index));
#endif
  return std::make_unique<Allocator>(Device::cpu(), pages_);
}

// One layout's ranks, from its first step boundary to the end of the run or a switch.
void Session::runLayout(int ranks) {
  slots_.clear();
  slots_.resize(options_.world ? 1 : static_cast<std::size_t>(ranks));
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    RankSlot& slot = slots_[i];
    if (options_.world && options_.allocator) {
      slot.allocator = options_.allocator;
    } else {
      slot.own = makeAllocator();
      slot.own->setLimit(config_.memoryLimitBytes);
      slot.own->setTrack(
          memoryTrack(options_.world ? options_.world->rank() : static_cast<int>(i)));
      slot.allocator = slot.own.get();
    }
  }
  if (options_.world) {
    runRank(*options_.world, slots_[0]);
  } else if (ranks == 1) {
    Communicator single;  // the size-1 world
    runRank(single, slots_[0]);
  } else {
    CommOptions comm;
#if PARASCOPE_HAVE_CUDA
    // Ranks sharing the GPU copy and reduce each other's buffers there.
    if (onGpu()) comm.deviceBuffers = cuda::deviceBuffers(config_.device.index);
#endif
    runInProcess(
        ranks,
        [&](Communicator& world) {
          runRank(world, slots_[static_cast<std::size_t>(world.rank())]);
        },
        comm);
  }
}

FinishedReport Session::run() {
  state_ = SessionState::Running;
  const bool mpi = options_.world.has_value();
  std::string tracePath;
  try {
    checkBeforeStart(mpi);
    if (onGpu()) measureDevicePeak();
    if (!config_.initWeights.empty() && options_.load.empty()) {
      initWeights_ = std::make_shared<const SafetensorsReader>(config_.initWeights);
      if (!config_.model.kind->shapesFromData()) {
        checkInitialWeights(*initWeights_, logicalTensors(config_));
      }
    }
    if (!options_.load.empty()) {
      loading_ = std::make_shared<const CheckpointReader>(options_.load, options_.verifyLoad);
      checkLoadableCounters(*loading_, config_);
      if (!config_.model.kind->shapesFromData()) {
        checkCheckpointTensors(loading_->manifest(), logicalTensors(config_),
                               "checkpoint " + loading_->directory());
      }
    }
    // Before any rank starts: a directory another run saves into, or one that cannot be
    // written, is refused now rather than at the first save.
    if (!options_.saveDir.empty() && (!mpi || options_.world->rank() == 0)) {
      saveLock_.emplace(options_.saveDir);
    }
    const int first = mpi ? options_.world->size() : config_.parallel.worldSize();
    if (options_.recorder) {
      options_.recorder->describe(config_.document);
      if (onGpu()) options_.recorder->recordDevice(config_.device.index);
      options_.recorder->begin(mpi ? &*options_.world : nullptr, first);
    }
    for (int ranks = first;;) {
      runLayout(ranks);
      started_ = true;  // the next layout continues the run
      loading_.reset();
      initWeights_.reset();
      if (ending_ != Ending::Switch) break;
      // Between two layouts: in-process, the old ranks' state indexed for the new ones to copy
      // from; under MPI each process keeps its own rank's for the transfers.
      std::vector<RankState> states;
      std::vector<const RankState*> views;
      states.reserve(slots_.size());
      for (RankSlot& slot : slots_) states.push_back(slot.trainer->state());
      for (const RankState& s : states) views.push_back(&s);
      switchCounters_ = states.front().counters;
      if (!mpi) {
        switchIndex_ = std::make_unique<StateIndex>(views);
        // A rank that owns nothing the copies read (a data-parallel replica without ZeRO) goes
        // now, before the new layout allocates: its pages are for the new layout's tensors.
        for (std::size_t i = 0; i < slots_.size(); ++i) {
          const auto& slices = states[i].slices;
          if (std::none_of(slices.begin(), slices.end(),
                           [](const StateSlice& s) { return s.owned; }))
            slots_[i].trainer.reset();
        }
      }
      switchBytes_ = 0;
      // What the old layout's allocators hold unused (a step's activations and buffers, the
      // replicas just freed) is for the new layout's tensors from the start; the rest of the
      // old state follows once copied.
      for (RankSlot& slot : slots_) slot.allocator->releaseCached();
      switchReusedFrom_ = pages().reusedBytes();
      // The new layout's memory beyond what the pool holds is faulted in while the switch is
      // waited on: in 4 KiB pages, which fault in fastest (PagePool::setHugePages).
      pages().setHugePages(false);
      switching_ = true;
      retiring_ = std::move(slots_);
      std::lock_guard lock(mutex_);
      switchFrom_ = config_;
      config_ = pending_.value();
      pending_.reset();
      ranks = config_.parallel.worldSize();
    }
    slots_.clear();
    if (options_.recorder) tracePath = options_.recorder->end(mpi ? options_.world->rank() : -1);
  } catch (const std::exception& e) {
    recordFailure(mpi ? options_.world->rank() : 0, e);  // kept only if no rank failed first
  }
  FinishedReport finished;
  std::optional<ErrorReport> failure;
  {
    std::lock_guard lock(mutex_);
    result_.tracePath = tracePath;
    result_.failed = error_.has_value();
    result_.checkpoint = lastCheckpoint_;
    finished = result_;
    failure = error_;
  }
  retiring_.clear();
  switchIndex_.reset();
  switching_ = false;
  pages().setHugePages(true);
  slots_.clear();
  loading_.reset();
  initWeights_.reset();
  if (saving_) {
    discardCheckpointStaging(saving_->first, saving_->second);
    saving_.reset();
  }
  saveLock_.reset();
  state_ = failure            ? SessionState::Failed
           : finished.stopped ? SessionState::Stopped
                              : SessionState::Finished;
  if (failure) publish([&](SessionObserver& o) { o.onError(*failure); });
  publish([&](SessionObserver& o) { o.onFinished(finished); });
  return finished;
}

void Session::start(bool paused) {
  if (state_ != SessionState::Idle || thread_.joinable()) {
    throw UserError("a session runs once: this one has already been started");
  }
  if (paused) gate_.pause();
  state_ = SessionState::Running;
  thread_ = std::thread([this] { run(); });
}

FinishedReport Session::wait() {
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return result_;
}

}  // namespace parascope
