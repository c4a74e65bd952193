#include "core/train/grad_reducer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

GradientReducer::GradientReducer(Model& model, const FlatLayout& layout, Communicator& comm,
                                 Mode mode, bool overlap, DType commType)
    : model_(model),
      layout_(layout),
      comm_(comm),
      mode_(mode),
      overlap_(overlap),
      commType_(commType),
      storage_(model.computeType()) {
  auto& params = model.parameters();
  buckets_.resize(layout.buckets.size());
  if (mode == Mode::AllReduce) {
    reduced_ = flattenGradients(model, layout);
  } else {
    reduced_ =
        Tensor::zeros({layout.shardSize()}, storage_, MemoryCategory::Gradient, model.allocator());
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      detachBucketGradients(model, layout, static_cast<int>(b));
    }
  }
  uses_.assign(params.size(), 0);
  for (const std::vector<int>& layer : layout.layerParameters) {
    for (int i : layer) uses_[static_cast<std::size_t>(i)] += 1;
  }
  model.addBackwardHook([this](std::size_t layer, bool finished) { onBackward(layer, finished); });
}

void GradientReducer::beginStep() {
  if (mode_ != Mode::AllReduce) {
    reduced_.zero();
    return;
  }
  // The model's gradients are views of reduced_: as Model::startGradients, but zeroing the runs
  // between the stale ones in one call each (a device's memset per parameter would be hundreds
  // of launches), the buckets' padding with them.
  auto& params = model_.parameters();
  std::vector<std::pair<std::int64_t, std::int64_t>> stale;  // where each lies: offset, end
  for (std::size_t i = 0; i < params.size(); ++i) {
    Parameter& p = params[i];
    p.gradStale = Model::startsStale(p);
    if (p.gradStale) stale.emplace_back(layout_.offset[i], layout_.offset[i] + p.numel());
  }
  std::sort(stale.begin(), stale.end());
  std::int64_t from = 0;
  for (const auto& [begin, end] : stale) {
    if (begin > from) reduced_.slice(from, begin - from).zero();
    from = end;
  }
  if (layout_.total > from) reduced_.slice(from, layout_.total - from).zero();
}

void GradientReducer::beginMicroStep(bool last) {
  last_ = last;
  communicating_ = last || mode_ == Mode::ReduceScatter;
  armed_ = communicating_ && overlap_;
  remaining_ = uses_;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = static_cast<int>(layout_.buckets[b].parameters.size());
  }
  // A parameter no layer uses has its final (zero) gradient already.
  for (std::size_t i = 0; i < uses_.size(); ++i) {
    if (uses_[i] == 0) buckets_[static_cast<std::size_t>(layout_.bucketOf[i])].pending -= 1;
  }
  nextToStart_ = nextToComplete_ = 0;
  if (armed_) startReady();
}

void GradientReducer::onBackward(std::size_t layer, bool finished) {
  if (!finished) {
    if (mode_ != Mode::ReduceScatter) return;
    if (armed_) {
      progress();
      // Bounded memory whatever the scheduling: at most kMaxInFlight reduced buckets wait.
      while (nextToStart_ - nextToComplete_ > kMaxInFlight) {
        buckets_[nextToComplete_].handle.wait();
        complete(static_cast<int>(nextToComplete_++));
      }
    }
    // Storage for the buckets this layer writes, zeroed, before its backward accumulates.
    for (int i : layout_.layerParameters[layer]) {
      const int b = layout_.bucketOf[static_cast<std::size_t>(i)];
      Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
      if (bucket.storage.defined()) continue;
      bucket.storage = Tensor::zeros({layout_.buckets[static_cast<std::size_t>(b)].count}, storage_,
                                     MemoryCategory::Gradient, model_.allocator());
      attachBucketGradients(model_, layout_, b, bucket.storage);
    }
    return;
  }
  for (int i : layout_.layerParameters[layer]) {
    if (--remaining_[static_cast<std::size_t>(i)] == 0) {
      buckets_[static_cast<std::size_t>(layout_.bucketOf[static_cast<std::size_t>(i)])].pending -=
          1;
    }
  }
  if (!armed_) return;
  startReady();
  progress();
}

void GradientReducer::startReady() {
  while (nextToStart_ < buckets_.size() && buckets_[nextToStart_].pending == 0) {
    start(static_cast<int>(nextToStart_++));
  }
}

void GradientReducer::issue(int b) {
  for (; static_cast<int>(nextToStart_) <= b; ++nextToStart_) {
    if (buckets_[nextToStart_].pending != 0) {
      throw std::logic_error("gradient reducer: bucket " + std::to_string(nextToStart_) +
                             " is reduced before its gradients are final");
    }
    start(static_cast<int>(nextToStart_));
  }
  progress();
}

void GradientReducer::start(int b) {
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  if (mode_ == Mode::ReduceScatter && !bucket.storage.defined()) {  // no layer wrote it: zeros
    bucket.storage =
        Tensor::zeros({fb.count}, storage_, MemoryCategory::Gradient, model_.allocator());
  }
  // A gradient no backward pass wrote this step counts as zero.
  for (int i : fb.parameters)
    Model::settleGradient(model_.parameters()[static_cast<std::size_t>(i)]);
  void* buffer =
      mode_ == Mode::AllReduce ? reduced_.slice(fb.begin, fb.count).raw() : bucket.storage.raw();
  if (commType_ != storage_) {
    bucket.staging =
        Tensor::empty({fb.count}, commType_, MemoryCategory::CommBuffer, model_.allocator());
    kernels::convertElements(buffer, storage_, bucket.staging.raw(), commType_, fb.count);
    buffer = bucket.staging.raw();
  }
  if (mode_ == Mode::AllReduce) {
    bucket.handle = comm_.allReduceAsync(buffer, buffer, static_cast<std::size_t>(fb.count),
                                         commType_, ReduceOp::Sum);
    return;
  }
  const std::int64_t n = layout_.partSize(fb);
  char* bytes = static_cast<char*>(buffer);
  bucket.handle = comm_.reduceScatterAsync(
      bytes, bytes + static_cast<std::size_t>(n * comm_.rank()) * dtypeSize(commType_),
      static_cast<std::size_t>(n), commType_, ReduceOp::Sum);
}

void GradientReducer::complete(int b) {
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  bucket.handle = CommHandle();
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  const std::int64_t n = layout_.partSize(fb);
  if (bucket.staging.defined()) {  // back to the storage type: all of it, or this rank's part
    const std::int64_t at = mode_ == Mode::AllReduce ? 0 : n * comm_.rank();
    const std::int64_t count = mode_ == Mode::AllReduce ? fb.count : n;
    const Tensor to = mode_ == Mode::AllReduce ? reduced_.slice(fb.begin, fb.count)
                                               : bucket.storage.slice(at, count);
    kernels::convertElements(bucket.staging.slice(at, count).raw(), commType_, to.raw(), storage_,
                             count);
    bucket.staging = Tensor();
  }
  if (mode_ == Mode::ReduceScatter) {
    model_.ops().accumulate(reduced_.slice(fb.shardOffset, n).raw(),
                            bucket.storage.slice(n * comm_.rank(), n).raw(), n, storage_);
    detachBucketGradients(model_, layout_, b);
    bucket.storage = Tensor();  // the full bucket is gone until the next backward writes it
  }
  if (last_ && onFinal_) onFinal_(b);
}

// Lets the started reductions progress (MPI moves only inside its calls) and notes when each
// finished, without completing any: a bucket is freed only where the step waits for it (the
// in-flight bound, the micro-step's end), so a run's peak gradient memory does not depend on how
// fast its collectives happen to be, and the planner's estimate (core/plan/memory_estimate.h) is
// that peak.
void GradientReducer::progress() {
  for (std::size_t b = nextToComplete_; b < nextToStart_; ++b) buckets_[b].handle.test();
}

double GradientReducer::endMicroStep() {
  if (!communicating_) return 0.0;
  const trace::Span span("gradient_reduce_wait", trace::Category::Sync);
  const auto start = std::chrono::steady_clock::now();
  armed_ = communicating_ = false;
  for (Bucket& b : buckets_) b.pending = 0;
  startReady();
  for (; nextToComplete_ < buckets_.size(); ++nextToComplete_) {
    buckets_[nextToComplete_].handle.wait();
    complete(static_cast<int>(nextToComplete_));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::pair<double, double> GradientReducer::squaresBySplit(int skip) const {
  double whole = 0, split = 0;
  for (std::size_t i = 0; i < model_.parameters().size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    const Parameter& p = model_.parameters()[i];
    std::int64_t at = layout_.offset[i], n = p.numel();  // in the flat space
    if (mode_ == Mode::ReduceScatter) {  // only this rank's part of the parameter's bucket
      const FlatLayout::Part part = layout_.partOf(static_cast<int>(i), n, comm_.rank());
      if (part.count == 0) continue;
      at = part.shard;
      n = part.count;
    }
    (p.split.whole() ? whole : split) +=
        model_.ops().sumOfSquares(reduced_.slice(at, n).raw(), n, storage_);
  }
  return {whole, split};
}

}  // namespace parascope
