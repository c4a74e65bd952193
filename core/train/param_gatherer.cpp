#include "core/train/param_gatherer.h"

#include <chrono>

#include "core/trace/trace.h"

namespace parascope {

ParameterGatherer::ParameterGatherer(Model& model, const FlatLayout& layout, Communicator& comm,
                                     const ParallelStrategy& strategy,
                                     std::optional<std::uint64_t> seed)
    : model_(model),
      layout_(layout),
      comm_(comm),
      buckets_(layout.buckets.size()),
      strategy_(strategy) {
  shard_ = Tensor::zeros({layout.shardSize()}, model.computeType(), MemoryCategory::Parameter,
                         model.allocator());
  auto& params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const FlatLayout::Part part = layout.partOf(static_cast<int>(i), p.numel(), comm.rank());
    if (part.count == 0) continue;
    Tensor value = p.storedValue();
    if (!value.defined()) {
      if (!seed) continue;
      value =
          Tensor::empty(p.shape, model.computeType(), MemoryCategory::Workspace, model.allocator());
      p.initialValues(*seed, value);
    }
    shard_.slice(part.shard, part.count)
        .copyFrom(value.view({p.numel()}).slice(part.local, part.count));
  }
  for (Parameter& p : params) p.storedValue() = Tensor();
  const int layers = static_cast<int>(model.layers().size());
  model.addForwardHook([this, layers](std::size_t layer, bool finished) {
    const int next = static_cast<int>(layer) + 1;
    // A backward starts where the forward ended: the last layer stays gathered for it.
    if (finished && next == layers && strategy_.mayKeepGathered(liveElements_)) {
      const std::vector<int>& mine = layout_.layerBuckets[layer];
      kept_.insert(kept_.end(), mine.begin(), mine.end());
      return;
    }
    onLayer(layer, finished, next < layers ? next : -1);
  });
  model.addBackwardPassHook([this](std::size_t layer, bool finished) {
    onLayer(layer, finished, static_cast<int>(layer) - 1);
  });
}

void ParameterGatherer::onLayer(std::size_t layer, bool finished, int next) {
  const std::vector<int>& mine = layout_.layerBuckets[layer];
  if (finished) {
    for (int b : mine) release(b);
    return;
  }
  for (int b : mine) acquire(b);
  releaseKept();
  // Prefetch: the next layer's gathers run while this layer computes, within the bounds.
  if (next >= 0) {
    const std::int64_t need = missingElements(static_cast<std::size_t>(next));
    if (strategy_.mayPrefetch(need, liveElements_)) {
      for (int b : layout_.layerBuckets[static_cast<std::size_t>(next)]) startGather(b);
    }
  }
  const trace::Span span("parameter_gather_wait", trace::Category::Sync);
  const auto start = std::chrono::steady_clock::now();
  for (int b : mine) {
    Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
    if (bucket.handle.valid()) {
      bucket.handle.wait();
      bucket.handle = CommHandle();
    }
  }
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::int64_t ParameterGatherer::missingElements(std::size_t layer) const {
  std::int64_t n = 0;
  for (int b : layout_.layerBuckets[layer]) {
    if (!buckets_[static_cast<std::size_t>(b)].storage.defined())
      n += layout_.buckets[static_cast<std::size_t>(b)].count;
  }
  return n;
}

void ParameterGatherer::releaseKept() {
  for (int b : kept_) release(b);
  kept_.clear();
}

double ParameterGatherer::takeWaitSeconds() {
  const double w = waited_;
  waited_ = 0;
  return w;
}

void ParameterGatherer::startGather(int b) {
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  if (bucket.storage.defined()) return;  // resident or already on its way
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  const std::int64_t n = layout_.partSize(fb);
  // In the storage type: gathers move bf16 / fp16 parameters under mixed precision.
  bucket.storage =
      Tensor::empty({fb.count}, shard_.dtype(), MemoryCategory::Parameter, model_.allocator());
  liveElements_ += fb.count;
  const Tensor mine = bucket.storage.slice(n * comm_.rank(), n);
  mine.copyFrom(shard_.slice(fb.shardOffset, n));
  bucket.handle = comm_.allGatherAsync(mine.raw(), bucket.storage.raw(),
                                       static_cast<std::size_t>(n), shard_.dtype());
  for (int i : fb.parameters) {
    Parameter& p = model_.parameters()[static_cast<std::size_t>(i)];
    p.storedValue() =
        bucket.storage.slice(layout_.offset[static_cast<std::size_t>(i)] - fb.begin, p.numel())
            .view(p.shape);
  }
}

void ParameterGatherer::acquire(int b) {
  startGather(b);
  buckets_[static_cast<std::size_t>(b)].users += 1;
}

void ParameterGatherer::release(int b) {
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  if (--bucket.users > 0 || bucket.handle.valid()) return;
  for (int i : layout_.buckets[static_cast<std::size_t>(b)].parameters) {
    model_.parameters()[static_cast<std::size_t>(i)].storedValue() = Tensor();
  }
  bucket.storage = Tensor();
  liveElements_ -= layout_.buckets[static_cast<std::size_t>(b)].count;
}

void ParameterGatherer::gatherAll() {
  if (pinned_) return;
  pinned_ = true;
  for (std::size_t b = 0; b < buckets_.size(); ++b) acquire(static_cast<int>(b));
  for (Bucket& bucket : buckets_) {
    if (bucket.handle.valid()) bucket.handle.wait();
    bucket.handle = CommHandle();
  }
}

void ParameterGatherer::releaseAll() {
  releaseKept();
  if (!pinned_) return;
  pinned_ = false;
  for (std::size_t b = 0; b < buckets_.size(); ++b) release(static_cast<int>(b));
}

}  // namespace parascope
