// Memory estimate. Model state, communication buffers and mixed precision's working copies are
// replayed: what the trainer allocates (trainer.cpp, flat_layout.cpp, grad_reducer.cpp,
// param_gatherer.cpp, sharded_optimizer.cpp, optimizer.cpp, model.cpp) as the step executor and
// its pipeline stages run the rank's program (step_executor.cpp, pipeline_stage.cpp), with sizes
// instead of tensors. Activations likewise, from what each layer allocates
// (ModelKind::layerActivations). tests/plan/test_memory_estimate.cpp holds the replay to the
// allocator.
#include "core/plan/memory_estimate.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/common/error.h"
#include "core/kernels/sgemm_library.h"
#include "core/offload/optimizer_swap.h"
#include "core/parallel/schedule.h"
#include "core/plan/strategy_plan.h"
#include "core/tensor/allocator.h"
#include "core/train/grad_reducer.h"
#include "core/train/param_gatherer.h"

namespace parascope {

namespace {

namespace fs = std::filesystem;

// Bytes live in one category while steps are replayed, and the most at any time.
struct Live {
  double now = 0, peak = 0;
  void add(double bytes) {
    now += bytes;
    peak = std::max(peak, now);
  }
  void remove(double bytes) { now -= bytes; }
  void transient(double bytes) {  // freed before anything else in the category changes
    add(bytes);
    remove(bytes);
  }
};
using Categories = std::array<Live, kMemoryCategoryCount>;

double bucketBytes(const FlatLayout& layout, std::size_t b, double elementBytes) {
  return static_cast<double>(layout.buckets[b].count) * elementBytes;
}

// ParameterGatherer's bookkeeping (param_gatherer.cpp) without the data: which buckets are
// gathered (Parameter memory beside the shard), how many running layers use each, and which
// gathers no layer has waited for yet (such a bucket stays until a layer needing it has waited
// and released it). Every free follows from the order of the passes alone.
class GatherReplay {
 public:
  GatherReplay(const FlatLayout& layout, const ParallelStrategy& s, double elementBytes,
               Live& parameters)
      : layout_(layout),
        strategy_(s),
        elementBytes_(elementBytes),
        live_(parameters),
        buckets_(layout.buckets.size()) {}

  // The forward hook: the model's last layer keeps its buckets for the backward that follows,
  // within the bound on gathered parameters.
  void forward(int layer, bool finished) {
    const int next = layer + 1, layers = static_cast<int>(layout_.layerBuckets.size());
    if (finished && next == layers && strategy_.mayKeepGathered(liveElements_)) {
      kept_.insert(kept_.end(), of(layer).begin(), of(layer).end());
      return;
    }
    pass(layer, finished, next < layers ? next : -1);
  }
  void backward(int layer, bool finished) { pass(layer, finished, layer - 1); }
  void prefetch(int b) { start(static_cast<std::size_t>(b)); }
  void releaseKept() {
    for (int b : kept_) release(static_cast<std::size_t>(b));
    kept_.clear();
  }

 private:
  struct Bucket {
    bool gathered = false;
    bool unwaited = false;
    int users = 0;
  };
  const std::vector<int>& of(int layer) const {
    return layout_.layerBuckets[static_cast<std::size_t>(layer)];
  }
  // Around a layer's pass: its buckets, then the next layer's prefetched while it runs, within
  // the bounds.
  void pass(int layer, bool finished, int next) {
    if (finished) {
      for (int b : of(layer)) release(static_cast<std::size_t>(b));
      return;
    }
    for (int b : of(layer)) {
      start(static_cast<std::size_t>(b));
      buckets_[static_cast<std::size_t>(b)].users += 1;
    }
    releaseKept();
    if (next >= 0) {
      std::int64_t need = 0;
      for (int b : of(next)) {
        if (!buckets_[static_cast<std::size_t>(b)].gathered)
          need += layout_.buckets[static_cast<std::size_t>(b)].count;
      }
      if (strategy_.mayPrefetch(need, liveElements_)) {
        for (int b : of(next)) start(static_cast<std::size_t>(b));
      }
    }
    for (int b : of(layer)) buckets_[static_cast<std::size_t>(b)].unwaited = false;
  }
  void start(std::size_t b) {
    if (buckets_[b].gathered) return;
    buckets_[b].gathered = buckets_[b].unwaited = true;
    liveElements_ += layout_.buckets[b].count;
    live_.add(bucketBytes(layout_, b, elementBytes_));
  }
  void release(std::size_t b) {
    Bucket& bucket = buckets_[b];
    if (--bucket.users > 0 || bucket.unwaited) return;
    bucket.gathered = false;
    liveElements_ -= layout_.buckets[b].count;
    live_.remove(bucketBytes(layout_, b, elementBytes_));
  }

  const FlatLayout& layout_;
  const ParallelStrategy& strategy_;
  std::int64_t liveElements_ = 0;
  double elementBytes_;
  Live& live_;
  std::vector<Bucket> buckets_;
  std::vector<int> kept_;
};

// GradientReducer's buckets (grad_reducer.cpp): ZeRO-2/3's full-size gradient buckets (Gradient
// memory) from the first pass writing them until their reduce-scatter completes, and staging
// copies in communication_data_type (CommBuffer memory) from a reduction's start to its
// completion. The reducer completes a reduction only where it waits for it, however soon the
// collective finished, so these are exactly what a run holds.
class ReduceReplay {
 public:
  ReduceReplay(const FlatLayout& layout, bool scatter, bool overlap, double elementBytes,
               double stagingBytes, Live& gradients, Live& staging)
      : layout_(layout),
        scatter_(scatter),
        overlap_(overlap),
        elementBytes_(elementBytes),
        stagingBytes_(stagingBytes),
        gradients_(gradients),
        staging_(staging),
        held_(layout.buckets.size(), false),
        uses_(layout.offset.size(), 0) {
    for (const std::vector<int>& layer : layout.layerParameters) {
      for (int i : layer) uses_[static_cast<std::size_t>(i)] += 1;
    }
  }

  // A reduction round: the step's, or each micro-batch's (ZeRO-2/3 without a pipeline).
  void beginRound() {
    armed_ = overlap_;
    remaining_ = uses_;
    pending_.clear();
    for (const FlatBucket& b : layout_.buckets)
      pending_.push_back(static_cast<int>(b.parameters.size()));
    for (std::size_t i = 0; i < uses_.size(); ++i) {
      if (uses_[i] == 0) pending_[bucketOf(static_cast<int>(i))] -= 1;
    }
    nextToStart_ = nextToComplete_ = 0;
    if (armed_) startReady();
  }
  // The gradient hook around a pass writing the layer's weight gradients.
  void backward(int layer, bool finished) {
    const std::vector<int>& params = layout_.layerParameters[static_cast<std::size_t>(layer)];
    if (!finished) {
      if (!scatter_) return;
      while (armed_ && nextToStart_ - nextToComplete_ > GradientReducer::kMaxInFlight)
        complete(nextToComplete_++);
      for (int i : params) hold(bucketOf(i));
      return;
    }
    for (int i : params) {
      if (--remaining_[static_cast<std::size_t>(i)] == 0) pending_[bucketOf(i)] -= 1;
    }
    if (armed_) startReady();
  }
  void issue(int b) {
    while (nextToStart_ <= static_cast<std::size_t>(b)) start(nextToStart_++);
  }
  void finishRound() {
    armed_ = false;
    std::fill(pending_.begin(), pending_.end(), 0);
    startReady();
    while (nextToComplete_ < pending_.size()) complete(nextToComplete_++);
  }

 private:
  std::size_t bucketOf(int i) const {
    return static_cast<std::size_t>(layout_.bucketOf[static_cast<std::size_t>(i)]);
  }
  void startReady() {
    while (nextToStart_ < pending_.size() && pending_[nextToStart_] == 0) start(nextToStart_++);
  }
  void hold(std::size_t b) {
    if (held_[b]) return;
    held_[b] = true;
    gradients_.add(bucketBytes(layout_, b, elementBytes_));
  }
  void start(std::size_t b) {
    if (scatter_) hold(b);
    staging_.add(bucketBytes(layout_, b, stagingBytes_));
  }
  void complete(std::size_t b) {
    staging_.remove(bucketBytes(layout_, b, stagingBytes_));
    if (!scatter_) return;
    held_[b] = false;
    gradients_.remove(bucketBytes(layout_, b, elementBytes_));
  }

  const FlatLayout& layout_;
  bool scatter_, overlap_;
  double elementBytes_, stagingBytes_;  // per element; staging 0 when gradients travel as stored
  Live &gradients_, &staging_;
  std::vector<bool> held_;
  std::vector<int> uses_, remaining_, pending_;
  bool armed_ = false;
  std::size_t nextToStart_ = 0, nextToComplete_ = 0;
};

// One rank's steps as the trainer runs them (Trainer::step, StepExecutor::run, PipelineStage):
// the program's instructions in order, each layer pass between the hooks the trainer installs,
// with mixed precision's f32 working copies of the layer's parameters during the pass (and of
// their gradients while it accumulates them; Workspace memory).
class StepReplay {
 public:
  StepReplay(const StrategyPlan& plan, const RankPlan& rank, Categories& live)
      : plan_(plan),
        rank_(rank),
        live_(live),
        chunks_(rankChunkRanges(plan.stages, plan.shape.stages, rank.pipelineRank)),
        fullPasses_(chunks_.size()),
        weightPasses_(chunks_.size()) {
    const ParallelStrategy& s = plan.config.parallel;
    const double stored = static_cast<double>(dtypeSize(s.compute));
    if (plan.flat) {
      const double staging =
          s.gradComm == s.compute ? 0 : static_cast<double>(dtypeSize(s.gradComm));
      reduce_.emplace(rank.layout, s.zeroStage >= 2, s.overlapComm, stored, staging,
                      category(MemoryCategory::Gradient), category(MemoryCategory::CommBuffer));
    }
    if (s.zeroStage >= 3)
      gather_.emplace(rank.layout, s, stored, category(MemoryCategory::Parameter));
    // ZeRO-2/3 without a pipeline reduce every micro-batch (Trainer::dataParallelWork).
    const bool eachMicroBatch = s.zeroStage >= 2 && !plan.config.pipeline.enabled;
    passesPerRound_ = eachMicroBatch ? 1 : plan.shape.microBatches;
  }

  void step() {
    if (gather_) gather_->releaseKept();
    std::fill(fullPasses_.begin(), fullPasses_.end(), 0);
    std::fill(weightPasses_.begin(), weightPasses_.end(), 0);
    const int lastBucket = static_cast<int>(rank_.layout.buckets.size()) - 1;
    bool roundOpen = false, roundReduced = false;
    for (const Instruction& in : rank_.program) {
      const bool writes =
          in.op == Op::Backward || in.op == Op::BackwardInput || in.op == Op::BackwardWeight;
      if (writes && reduce_ && !roundOpen) {
        if (roundReduced) reduce_->finishRound();
        reduce_->beginRound();
        roundOpen = true;
        roundReduced = false;
      }
      if (in.op == Op::Forward) {
        const LayerRange& chunk = chunks_[static_cast<std::size_t>(in.chunk)];
        for (int layer = chunk.begin; layer < chunk.end; ++layer) forward(layer);
      } else if (writes) {
        backward(in);
      } else if (in.op == Op::ReduceGradBucket || in.op == Op::ZeroScatter) {
        reduce_->issue(in.bucket);
        roundOpen = roundOpen && in.bucket != lastBucket;
        roundReduced = roundReduced || in.bucket == lastBucket;
      } else if (in.op == Op::ZeroGather) {
        gather_->prefetch(in.bucket);
      } else if (in.op == Op::OptimizerStep) {
        if (roundReduced) reduce_->finishRound();
        optimizerStep();
      }
    }
  }

 private:
  Live& category(MemoryCategory c) { return live_[static_cast<std::size_t>(c)]; }

  void workingCopies(int layer, bool gradients) {
    if (plan_.config.parallel.compute == DType::F32) return;
    const double bytes =
        4.0 *
        static_cast<double>(rank_.modelLayers[static_cast<std::size_t>(layer)].parameterElements) *
        (gradients ? 2 : 1);
    category(MemoryCategory::Workspace).transient(bytes);
  }

  void forward(int layer) {
    if (gather_) gather_->forward(layer, false);
    workingCopies(layer, false);
    if (gather_) gather_->forward(layer, true);
  }

  // B, Bi or W of a chunk: its layers last to first, full recompute running each forward again
  // first. A pass accumulating weight gradients is between the gradient hooks, the second only
  // after the round's last such pass.
  void backward(const Instruction& in) {
    const auto c = static_cast<std::size_t>(in.chunk);
    const bool weight = in.op == Op::BackwardWeight;
    const bool last = ++(weight ? weightPasses_ : fullPasses_)[c] % passesPerRound_ == 0;
    const bool restore = !weight && plan_.config.pipeline.recompute == Recompute::Full;
    for (int layer = chunks_[c].end; layer-- > chunks_[c].begin;) {
      if (restore) forward(layer);
      const bool splits = rank_.modelLayers[static_cast<std::size_t>(layer)].splitsBackward;
      const bool writes = in.op == Op::Backward || splits == weight;
      if (writes && reduce_) reduce_->backward(layer, false);
      if (gather_) gather_->backward(layer, false);
      // Model::backwardWeightLayer makes f32 gradients for every layer, split or not.
      workingCopies(layer, writes || weight);
      if (gather_) gather_->backward(layer, true);
      if (writes && last && reduce_) reduce_->backward(layer, true);
    }
  }

  // Trainer::sumTiedEmbedding holds the stage's wte gradient (rebuilt from the shards under
  // ZeRO-2/3), the peer's, and under mixed precision the peer's widened to f32, at once; then
  // no gathered copy outlives the update.
  void optimizerStep() {
    const ParallelStrategy& s = plan_.config.parallel;
    const double stored = static_cast<double>(dtypeSize(s.compute));
    const double bytes = static_cast<double>(rank_.tiedEmbeddingElements) *
                         (stored * (s.zeroStage >= 2 ? 2 : 1) + (s.compute == DType::F32 ? 0 : 4));
    category(MemoryCategory::CommBuffer).transient(bytes);
    if (gather_) gather_->releaseKept();
  }

  const StrategyPlan& plan_;
  const RankPlan& rank_;
  Categories& live_;
  std::vector<LayerRange> chunks_;              // layer ranges of the rank's own model
  std::vector<int> fullPasses_, weightPasses_;  // per chunk, this step (PipelineStage)
  int passesPerRound_ = 1;
  std::optional<GatherReplay> gather_;
  std::optional<ReduceReplay> reduce_;
};

// One rank's activations over its step (StepExecutor, PipelineStage), in elements of the
// activation type, but what a layer keeps between its passes, which mixed precision stores in the
// compute type where that is narrower (Model::narrowKept): a chunk's forward leaves each layer's
// kept state and output per micro-batch (full recompute only the outputs, each layer's forward
// running again right before its backward), its backward frees them last layer first. The executor
// holds a chunk's output gradient for the chunk's backward and its output until sent. A receive
// posts buffers for the peer's messages to this rank in the peer's order up to the one it needs, so
// earlier ones wait in theirs. A send holds its tensor until it is found complete, which is only
// checked at the rank's next send: the replay takes every earlier send to be complete by then (its
// peer has posted the receive) and the last to be held until the optimizer step waits for it.
class ActivationReplay {
 public:
  ActivationReplay(const StrategyPlan& plan, const RankPlan& rank, Live& live, double elementBytes)
      : plan_(plan),
        bytes_(elementBytes),
        keptBytes_(
            std::min(elementBytes, static_cast<double>(dtypeSize(plan.config.parallel.compute)))),
        rank_(rank),
        live_(live),
        layers_(plan.config.model.kind->layerActivations(plan.config)),
        full_(plan.config.pipeline.recompute == Recompute::Full),
        lastStage_(plan.shape.virtualStages() - 1) {}

  void step() {
    const Program& program = rank_.program;
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Instruction& in = program[i];
      switch (in.op) {
        case Op::Forward: forward(in, backwardFollows(program, i)); break;
        case Op::Backward:
        case Op::BackwardInput: backward(in); break;
        case Op::BackwardWeight: weight(in); break;
        case Op::SendActivation:
        case Op::SendGrad:
          remove(sending_);
          sending_ = message(key(in));
          break;
        case Op::RecvActivation:
        case Op::RecvGrad: receive(in); break;
        case Op::OptimizerStep:
          remove(sending_);
          sending_ = 0;
          break;
        default: break;  // data-parallel work: no activations
      }
    }
  }

  // Bytes a chunk's forward leaves per micro-batch until its backward: its input and each
  // layer's state and output, but the last layer's (sent, or the losses); under mixed precision
  // the inputs (the outputs before them) stored in the compute type with the rest of the state.
  double heldPerMicroBatch(int chunk) const {
    const LayerRange& c = rank_.chunks[static_cast<std::size_t>(chunk)];
    double held = 0, narrowed = 0, saved = 0;
    for (int l = c.begin; l < c.end; ++l) {
      const double narrow = narrowing() && !full_ ? at(l).narrowed() + input(l) : 0;
      narrowed += narrow;
      saved += full_ ? 0 : lowSaving(l);
      held += (full_ ? 0 : at(l).kept) + input(l) - narrow;
    }
    return bytes_ * held + keptBytes_ * narrowed - saved;
  }

 private:
  using Key = std::tuple<Op, int, int>;  // a send's (op, stage, micro-batch)
  static Key key(const Instruction& in) { return {in.op, in.stage, in.microBatch}; }
  void add(double elements) { live_.add(bytes_ * elements); }
  void remove(double elements) { live_.remove(bytes_ * elements); }
  void transient(double elements) { live_.transient(bytes_ * elements); }
  const LayerActivations& at(int layer) const { return layers_[static_cast<std::size_t>(layer)]; }
  // What layer's kept elements stored in the compute type save against as many f32 ones: to be
  // taken off every figure that counts its kept state (kept, forwardPeak, keptForWeight).
  double lowSaving(int layer) const { return (bytes_ - keptBytes_) * at(layer).keptLow; }
  void addWithKept(int layer, double elements) { live_.add(bytes_ * elements - lowSaving(layer)); }
  void removeWithKept(int layer, double elements) {
    live_.remove(bytes_ * elements - lowSaving(layer));
  }
  double input(int layer) const { return layer > 0 ? at(layer - 1).output : 0; }
  // The gradient a layer's backward starts from: the next layer's input gradient.
  double outputGradient(int layer) const {
    return layer + 1 < static_cast<int>(layers_.size()) ? at(layer + 1).inputGradient : 0;
  }
  // A transfer carries a stage's output or its input gradient.
  double message(const Key& k) const {
    const LayerRange& s = plan_.stages[static_cast<std::size_t>(std::get<1>(k))];
    return std::get<0>(k) == Op::SendActivation ? at(s.end - 1).output : at(s.begin).inputGradient;
  }
  const LayerRange& chunk(const Instruction& in) const {
    return rank_.chunks[static_cast<std::size_t>(in.chunk)];
  }

  bool narrowing() const { return keptBytes_ != bytes_; }
  // The layer's input and kept tensors stored in the compute type one by one, in the order kept
  // (the input first), each copy made before its f32 tensor goes (Model::narrowKept); the
  // input's f32 goes when its caller drops it, which forward() decides.
  void narrow(int layer) {
    live_.add(keptBytes_ * input(layer));
    for (const double e : at(layer).keptTensors) {  // whole bytes: the steps add up exactly
      live_.add(keptBytes_ * e);
      live_.remove(bytes_ * e);
    }
  }
  // And widened back before the layer's backward pass, each f32 copy made before its narrow one
  // goes (Model::widenKept): every step adds, so the last is the largest moment.
  void widen(int layer) {
    const std::vector<double>& kept = at(layer).keptTensors;
    const double in = input(layer);
    if (!narrowing() || (kept.empty() && in == 0)) return;
    live_.add((bytes_ - keptBytes_) * (at(layer).narrowed() + in));
    live_.transient(keptBytes_ * (kept.empty() ? in : kept.back()));
  }

  // A full-recompute forward drops each layer's state unnarrowed, and a chunk's last layer whose
  // backward comes next keeps its state f32 (PipelineStage::forward). A narrowed layer's f32
  // input goes as the layer returns, the chunk's own as the chunk does (StepExecutor::forward).
  void forward(const Instruction& in, bool backwardNext) {
    const LayerRange& c = chunk(in);
    bool chunkInputNarrowed = false;
    for (int l = c.begin; l < c.end; ++l) {
      addWithKept(l, at(l).forwardPeak);
      remove(at(l).forwardPeak - at(l).output - at(l).kept);
      if (full_) {
        removeWithKept(l, at(l).kept);  // only the input stays
      } else if (backwardNext && l + 1 == c.end) {
        wide_.insert(key(in));
      } else if (narrowing()) {
        narrow(l);
        if (l > c.begin) remove(input(l));
        chunkInputNarrowed = chunkInputNarrowed || l == c.begin;
      }
    }
    if (chunkInputNarrowed) remove(input(c.begin));
    if (in.stage == lastStage_) remove(at(c.end - 1).output);  // the losses, once summed
  }

  // Each layer's state restored (full recompute: its forward's output dropped), its pass, its
  // state and input freed, and the gradient it started from dropped unless the executor holds
  // it (the chunk's) or the layer keeps it for its weight half.
  void backward(const Instruction& in) {
    const LayerRange& c = chunk(in);
    const bool half = in.op == Op::BackwardInput;
    for (int l = c.end; l-- > c.begin;) {
      const LayerActivations& a = at(l);
      if (full_) {  // its forward again, its state f32 for the backward right after
        addWithKept(l, a.forwardPeak);
        remove(a.forwardPeak - a.kept);
      } else if (l + 1 < c.end || wide_.erase({Op::Forward, in.stage, in.microBatch}) == 0) {
        widen(l);
      }
      transient(half ? a.inputHalfPeak : a.backwardPeak);
      if (half) {
        remove(a.kept - a.keptForWeight);
      } else {
        removeWithKept(l, a.kept + input(l));
      }
      add(a.inputGradient);
      if (l + 1 < c.end && !(half && a.keepsOutputGradient)) remove(outputGradient(l));
    }
    if (!(half && at(c.end - 1).keepsOutputGradient)) remove(outputGradient(c.end - 1));
    if (in.stage == 0) remove(at(c.begin).inputGradient);  // no stage before to send it to
  }

  void weight(const Instruction& in) {
    const LayerRange& c = chunk(in);
    for (int l = c.end; l-- > c.begin;) {
      const LayerActivations& a = at(l);
      transient(a.weightHalfPeak);
      removeWithKept(l,
                     a.keptForWeight + input(l) + (a.keepsOutputGradient ? outputGradient(l) : 0));
    }
  }

  // The peer's sends to this rank, in its program's order, the first time it is heard from.
  std::deque<Key>& expected(int peer) {
    auto [it, fresh] = expected_.try_emplace(peer);
    if (fresh) {
      for (const Instruction& in : plan_.ranks[static_cast<std::size_t>(peer)].program) {
        if ((in.op == Op::SendActivation || in.op == Op::SendGrad) && in.peer == rank_.pipelineRank)
          it->second.push_back(key(in));
      }
    }
    return it->second;
  }

  void receive(const Instruction& in) {
    const Key want = in.op == Op::RecvActivation
                         ? Key{Op::SendActivation, in.stage - 1, in.microBatch}
                         : Key{Op::SendGrad, in.stage + 1, in.microBatch};
    std::deque<Key>& queue = expected(in.peer);
    while (posted_.count(want) == 0) {
      posted_.insert(queue.front());
      add(message(queue.front()));
      queue.pop_front();
    }
    posted_.erase(want);
  }

  const StrategyPlan& plan_;
  double bytes_;      // of an element
  double keptBytes_;  // of a kept element
  const RankPlan& rank_;
  Live& live_;                            // bytes
  std::vector<LayerActivations> layers_;  // of the whole model
  bool full_;
  int lastStage_;
  std::map<int, std::deque<Key>> expected_;  // per peer: its sends to this rank not yet posted
  std::set<Key> posted_;                     // receives posted ahead of their instruction
  std::set<Key> wide_;                       // forwards whose chunk's last layer kept its state f32
  double sending_ = 0;                       // the send in flight
};

// Peaks per category of one pipeline rank: what the trainer allocates once, then two steps (the
// second begins with what the first left gathered). `microBatches`: the step's, which the plan
// may replay fewer of (replayedConfig).
struct Replayed {
  Categories live;
  double modelState = 0;                                // MemoryEstimate::modelStateBytes
  std::array<double, kMemoryCategoryCount> resident{};  // MemoryItem::residentBytes
  std::array<double, kMemoryCategoryCount> stepPeak{};  // MemoryItem::stepBytes
};

// ZeRO-Offload from a GPU (core/train/sharded_optimizer.h): the optimizer state in the host's
// memory; on the CPU it stays where the model is.
bool offloadsToHost(const TrainConfig& c) {
  return c.device.kind != Device::Kind::Cpu &&
         c.parallel.offloadOptimizer.device == OffloadDevice::Cpu;
}

Replayed replayRank(const StrategyPlan& plan, const RankPlan& rank, int microBatches,
                    double activationBytes) {
  const ParallelStrategy& s = plan.config.parallel;
  const double stored = static_cast<double>(dtypeSize(s.compute));
  const auto model = static_cast<double>(rank.parameterElements);
  const auto flat = static_cast<double>(rank.layout.total);
  const auto shard = static_cast<double>(rank.layout.shardSize());
  Replayed replayed;
  Categories& live = replayed.live;
  auto at = [&live](MemoryCategory c) -> Live& { return live[static_cast<std::size_t>(c)]; };
  // In the stored type: the model's own values (ZeRO 0), ZeRO-1/2's flat buffer or ZeRO-3's
  // shard; the model's own gradients, the flat buffer (data parallelism, ZeRO-1) or ZeRO-2/3's
  // shard.
  // ZeRO-3's shard swapped to a disk: only the swap's buffers (core/offload/parameter_swap.h).
  const double values = s.zeroStage == 0 ? model : s.zeroStage < 3 ? flat : shard;
  const double gradients = !plan.flat ? model : s.zeroStage < 2 ? flat : shard;
  at(MemoryCategory::Parameter)
      .add(s.swapsParameters()
               ? static_cast<double>(parameterSwapLayout(rank.layout, s.compute, s).memoryBytes())
               : values * stored);
  at(MemoryCategory::Gradient).add(gradients * stored);
  // AdamW's two f32 moments and under mixed precision the f32 master, sharded from ZeRO-1 on;
  // swapped to a disk, only the sub-group buffers (core/offload/optimizer_swap.h).
  if (s.swapsOptimizer()) {
    at(MemoryCategory::OptimizerState)
        .add(static_cast<double>(
            optimizerSwapLayout(rank.layout.shardSize(), s.compute != DType::F32, s)
                .memoryBytes()));
  } else if (offloadsToHost(plan.config)) {
    // ZeRO-Offload: none on the device (hostBytes).
  } else {
    at(MemoryCategory::OptimizerState)
        .add((s.zeroStage >= 1 ? shard : model) * (s.compute == DType::F32 ? 8 : 12));
  }
  for (MemoryCategory c :
       {MemoryCategory::Parameter, MemoryCategory::Gradient, MemoryCategory::OptimizerState}) {
    replayed.modelState += at(c).now;
    replayed.resident[static_cast<std::size_t>(c)] = at(c).now;
  }
  // ZeRO-3 initialises its shard one parameter at a time, through a copy of it.
  if (s.zeroStage >= 3)
    at(MemoryCategory::Workspace)
        .transient(static_cast<double>(rank.largestParameterElements) * stored);
  // The steps' peaks apart from the construction's.
  std::array<double, kMemoryCategoryCount> constructed{};
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    constructed[c] = live[c].peak;
    live[c].peak = live[c].now;
  }
  // The step's batches, each kept from its first use to the step's end (StepExecutor's cache).
  at(MemoryCategory::Workspace).add(microBatches * plan.config.model.kind->batchBytes(plan.config));
  StepReplay replay(plan, rank, live);
  replay.step();
  replay.step();
  ActivationReplay activations(plan, rank, at(MemoryCategory::Activation), activationBytes);
  activations.step();
  // GPipe holds every micro-batch's forward at once, so those not replayed add theirs (it runs
  // one chunk per rank); the other schedules hold as many in a shorter step.
  const ScheduleInfo& schedule = findSchedule(plan.config.pipeline.schedule);
  const PipelineShape step{plan.shape.stages, microBatches, plan.shape.chunks};
  const int unreplayed = schedule.promisedPeak(step, rank.pipelineRank).held -
                         schedule.promisedPeak(plan.shape, rank.pipelineRank).held;
  at(MemoryCategory::Activation).peak += unreplayed * activations.heldPerMicroBatch(0);
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    replayed.stepPeak[c] = live[c].peak;
    live[c].peak = std::max(live[c].peak, constructed[c]);
  }
  return replayed;
}

// Every rank's program returns to the same instructions each cycle of p v micro-batches once
// its warm-up is over, so past four cycles a plan with three and the same remainder replays the
// same peaks (tests/plan checks it; GPipe's activations grow with the step, replayRank adds the
// rest), and a step of 65536 micro-batches costs no more than one of a few.
TrainConfig replayedConfig(const TrainConfig& c) {
  const int cycle = c.parallel.pipeline * c.pipeline.chunks;
  TrainConfig r = c;
  if (c.gradientAccumulation > 4 * cycle)
    r.gradientAccumulation = 3 * cycle + c.gradientAccumulation % cycle;
  return r;
}

constexpr const char* kItemNames[kMemoryCategoryCount] = {
    "parameters", "gradients", "optimizer state", "activations", "communication buffers",
    "workspace"};

std::uint32_t gzipStatedSize(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char tail[4] = {0, 0, 0, 0};
  in.seekg(-4, std::ios::end);
  if (!in.read(reinterpret_cast<char*>(tail), 4)) return 0;
  return tail[0] | (tail[1] << 8) | (tail[2] << 16) | (std::uint32_t{tail[3]} << 24);
}

double readMeminfoAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

double readNumber(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stod(text);
  } catch (...) {
    return -1;
  }
}

}  // namespace

double MemoryEstimate::perRankBytes() const {
  double sum = 0;
  for (const MemoryItem& i : items) sum += i.bytes;
  return sum;
}

double MemoryEstimate::trackedBytes() const {
  double sum = 0;
  for (const MemoryItem& i : items)
    if (i.name != "data") sum += i.bytes;
  return sum;
}

const MemoryItem& MemoryEstimate::largest() const {
  return *std::max_element(
      items.begin(), items.end(),
      [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
}

std::vector<MemoryEstimate> estimateRankMemory(const TrainConfig& c, double dataBytes,
                                               int ranksSharingMemory, double activationBytes) {
  const StrategyPlan plan = planStrategy(replayedConfig(c));
  std::vector<MemoryEstimate> ranks;
  for (const RankPlan& rank : plan.ranks) {
    const Replayed replayed = replayRank(plan, rank, c.gradientAccumulation, activationBytes);
    MemoryEstimate& e = ranks.emplace_back();
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
      e.items.push_back(
          {kItemNames[i], replayed.live[i].peak, replayed.resident[i], replayed.stepPeak[i]});
    e.modelStateBytes = replayed.modelState;
    if (c.parallel.swapsParameters()) {
      e.parameterSwapBytes = static_cast<double>(
          parameterSwapLayout(rank.layout, c.parallel.compute, c.parallel).fileBytes());
    }
    e.swapBytes = e.parameterSwapBytes;
    if (offloadsToHost(c)) {
      // AdamW's moments and mixed precision's f32 masters for the shard, and the host's copies
      // of the shard's stored values and gradients.
      const DType t = c.parallel.compute;
      e.hostBytes = static_cast<double>(rank.layout.shardSize()) *
                    static_cast<double>((t == DType::F32 ? 8 : 12) + 2 * dtypeSize(t));
    }
    if (c.parallel.swapsOptimizer()) {
      e.swapBytes += static_cast<double>(
          optimizerSwapLayout(rank.layout.shardSize(), c.parallel.compute != DType::F32, c.parallel)
              .fileBytes());
    }
    if (c.parallel.zeroStage >= 3) {
      for (const FlatBucket& b : rank.layout.buckets)
        e.largestParameterPart = std::max(e.largestParameterPart, rank.layout.partSize(b));
    }
    e.items.push_back({"data", dataBytes, dataBytes, dataBytes});
    e.ranksSharingMemory = std::max(1, ranksSharingMemory);
  }
  return ranks;
}

MemoryEstimate estimateMemory(const TrainConfig& c, double dataBytes, int ranksSharingMemory,
                              double activationBytes) {
  std::vector<MemoryEstimate> ranks =
      estimateRankMemory(c, dataBytes, ranksSharingMemory, activationBytes);
  return std::move(*std::max_element(ranks.begin(), ranks.end(),
                                     [](const MemoryEstimate& a, const MemoryEstimate& b) {
                                       return a.perRankBytes() < b.perRankBytes();
                                     }));
}

int largestMicroBatch(const TrainConfig& c, double dataBytes, int ranksSharingMemory,
                      double availableBytes, int limit, double activationBytes) {
  const auto fits = [&](int microBatch) {
    TrainConfig at = c;
    at.microBatch = microBatch;
    at.globalBatch = microBatch * c.gradientAccumulation * c.parallel.data;
    return estimateMemory(at, dataBytes, ranksSharingMemory, activationBytes).totalBytes() <=
           availableBytes;
  };
  if (!fits(1)) return 0;
  int lo = 1, hi = limit;  // fits(lo); the answer is in [lo, hi]
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

double dataBytesInMemory(const DataSpec& data) {
  std::error_code ec;
  double total = 0;
  if (data.kind == DataSpec::Kind::Idx) {
    for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      const fs::path f = fs::path(data.path) / name;
      if (fs::is_regular_file(f, ec)) total += gzipStatedSize(f);
    }
    return total;
  }
  const fs::file_status st = fs::status(data.path, ec);
  if (ec) return 0;
  if (fs::is_regular_file(st)) return static_cast<double>(fs::file_size(data.path, ec));
  if (!fs::is_directory(st)) return 0;
  for (auto it = fs::recursive_directory_iterator(data.path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code fileEc;
    if (it->is_regular_file(fileEc) && !it->is_symlink(fileEc)) {
      const auto size = it->file_size(fileEc);
      if (!fileEc) total += static_cast<double>(size);
    }
  }
  return total;
}

double availableMemoryBytes() {
  const double meminfo = readMeminfoAvailable();
  const double limit = readNumber("/sys/fs/cgroup/memory.max");
  const double used = readNumber("/sys/fs/cgroup/memory.current");
  const double cgroup = limit >= 0 && used >= 0 ? std::max(0.0, limit - used) : -1;
  if (meminfo < 0) return cgroup;
  if (cgroup < 0) return meminfo;
  return std::min(meminfo, cgroup);
}

double availableAddressSpaceBytes() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) {
      const double used = std::strtod(line.c_str() + 7, nullptr) * 1024;
      return static_cast<double>(limit.rlim_cur) - used;
    }
  }
  return -1;
}

double addressSpacePerRankThread() {
  return kernels::sgemmLibrary() == kernels::SgemmLibrary::OneDnn ? 96.0 * (1 << 20)
                                                                  : 192.0 * (1 << 20);
}

void checkAddressSpace(const MemoryEstimate& estimate, int threads, double availableBytes) {
  const double threadBytes = addressSpacePerRankThread() * threads;
  const double needed = estimate.totalBytes() + threadBytes;
  if (availableBytes < 0 || needed <= availableBytes) return;
  throw UserError("address space: the run needs about " + formatBytes(needed) + " (" +
                  formatBytes(estimate.totalBytes()) + " of memory and " +
                  formatBytes(threadBytes) + " for " + std::to_string(threads) +
                  " rank threads' stacks, malloc arenas and BLAS buffers), more than the " +
                  formatBytes(availableBytes) +
                  " the address-space limit (ulimit -v) leaves; raise the limit, or use fewer "
                  "in-process ranks or MPI processes");
}

double availableDiskBytes(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return -1;
  return static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
}

void checkCountFits(const std::string& option, double count, double bytesPerItem, double fixedBytes,
                    const std::string& resource, double availableBytes) {
  const double needed = fixedBytes + count * bytesPerItem;
  if (availableBytes < 0 || needed <= availableBytes) return;
  const double fit = std::max(0.0, std::floor((availableBytes - fixedBytes) / bytesPerItem));
  char counts[96];
  std::snprintf(counts, sizeof counts, "%.0f", count);
  char most[64];
  std::snprintf(most, sizeof most, "%.0f", fit);
  throw UserError(option + " " + counts + ": the benchmark needs about " + formatBytes(needed) +
                  " of " + resource + " (" + formatBytes(bytesPerItem) + " each, plus " +
                  formatBytes(fixedBytes) + "), more than the " + formatBytes(availableBytes) +
                  " available; at most " + most + " fit");
}

void checkMemory(const MemoryEstimate& e, double availableBytes) {
  if (availableBytes < 0 || e.totalBytes() <= availableBytes) return;
  std::string parts;
  for (const MemoryItem& i : e.items) {
    parts += (parts.empty() ? "" : ", ") + i.name + " " + formatBytes(i.bytes);
  }
  const std::string ranks =
      e.ranksSharingMemory > 1
          ? std::to_string(e.ranksSharingMemory) + " ranks x " + formatBytes(e.perRankBytes())
          : "one rank";
  throw UserError("memory: the run needs about " + formatBytes(e.totalBytes()) + " (" + ranks +
                  ": " + parts + "; largest: " + e.largest().name + "), more than the " +
                  formatBytes(availableBytes) +
                  " available; use a smaller model or micro-batch, more ranks, a higher ZeRO "
                  "stage or recompute");
}

void checkHostMemory(const MemoryEstimate& e, double availableBytes) {
  const double need = e.hostBytes * e.ranksSharingMemory;
  if (availableBytes < 0 || need <= availableBytes) return;
  const std::string ranks = e.ranksSharingMemory > 1 ? std::to_string(e.ranksSharingMemory) +
                                                           " ranks x " + formatBytes(e.hostBytes)
                                                     : "one rank";
  throw UserError("memory: offload_optimizer device cpu keeps about " + formatBytes(need) +
                  " of optimizer state and its copies in host memory (" + ranks +
                  "), more than the " + formatBytes(availableBytes) +
                  " available; use more data-parallel ranks or machines (each rank keeps its "
                  "shard), or keep the optimizer on the GPU (offload_optimizer device none)");
}

}  // namespace parascope
