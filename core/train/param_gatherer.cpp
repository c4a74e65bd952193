#include "core/train/param_gatherer.h"

#include <chrono>
#include <cstring>

#include "core/trace/trace.h"

namespace parascope {

ParameterSwapLayout parameterSwapLayout(const FlatLayout& layout, DType stored,
                                        const ParallelStrategy& s) {
  ParameterSwapLayout l;
  for (const FlatBucket& b : layout.buckets) l.partElements.push_back(layout.partSize(b));
  l.elementBytes = static_cast<std::int64_t>(dtypeSize(stored));
  l.bufferCount = s.offloadParam.bufferCount;
  return l;
}

ParameterGatherer::ParameterGatherer(Model& model, const FlatLayout& layout, Communicator& comm,
                                     const ParallelStrategy& strategy,
                                     std::optional<std::uint64_t> seed)
    : model_(model),
      layout_(layout),
      comm_(comm),
      buckets_(layout.buckets.size()),
      strategy_(strategy) {
  writeShard(seed);
  auto& params = model.parameters();
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

// The rank's shard from the model's values: into memory, or swapped, a bucket's part at a time
// through the swap's buffers (the whole shard is never held).
void ParameterGatherer::writeShard(std::optional<std::uint64_t> seed) {
  const DType type = model_.computeType();
  const std::int64_t size = static_cast<std::int64_t>(dtypeSize(type));
  if (strategy_.swapsParameters()) {
    swap_ = std::make_unique<ParameterSwap>(parameterSwapLayout(layout_, type, strategy_),
                                            strategy_, model_.allocator());
    for (int i = swap_->layout().buffers() - 1; i >= 0; --i) freeBuffers_.push_back(i);
    // The optimizer's sweep and a checkpoint's staging use every buffer.
    swap_->setQuiesce([this] { dropReadAhead(); });
  } else {
    shard_ =
        Tensor::zeros({layout_.shardSize()}, type, MemoryCategory::Parameter, model_.allocator());
  }
  const int buffers = swap_ ? swap_->layout().buffers() : 0;
  std::vector<AioFile::Ticket> pending(static_cast<std::size_t>(buffers), 0);
  auto& params = model_.parameters();
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const FlatBucket& fb = layout_.buckets[b];
    char* part = nullptr;
    if (swap_) {
      AioFile::Ticket& t = pending[b % static_cast<std::size_t>(buffers)];
      if (t != 0) swap_->file().wait(t);
      part = swap_->buffer(static_cast<int>(b) % buffers);
      std::memset(part, 0,
                  static_cast<std::size_t>(swap_->layout().recordBytes(static_cast<int>(b))));
    }
    for (int i : fb.parameters) {
      const Parameter& p = params[static_cast<std::size_t>(i)];
      const FlatLayout::Part mine = layout_.partOf(i, p.numel(), comm_.rank());
      if (mine.count == 0) continue;
      Tensor value = p.storedValue();
      if (!value.defined()) {
        if (!seed) continue;
        value = Tensor::empty(p.shape, type, MemoryCategory::Workspace, model_.allocator());
        p.initialValues(*seed, value);
      }
      const Tensor from = value.view({p.numel()}).slice(mine.local, mine.count);
      if (swap_) {
        std::memcpy(part + (mine.shard - fb.shardOffset) * size, from.raw(), from.nbytes());
      } else {  // the shard is where the model is, a GPU's memory maybe
        shard_.slice(mine.shard, mine.count).copyFrom(from);
      }
    }
    if (swap_) {
      pending[b % static_cast<std::size_t>(buffers)] = swap_->write(static_cast<int>(b), part);
    }
  }
  if (swap_) swap_->file().waitAll();
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
    if (swap_) readAhead(next, next - static_cast<int>(layer));
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
  bucket.storage = Tensor::empty({fb.count}, model_.computeType(), MemoryCategory::Parameter,
                                 model_.allocator());
  liveElements_ += fb.count;
  for (int i : fb.parameters) {
    Parameter& p = model_.parameters()[static_cast<std::size_t>(i)];
    p.storedValue() =
        bucket.storage.slice(layout_.offset[static_cast<std::size_t>(i)] - fb.begin, p.numel())
            .view(p.shape);
  }
  const Tensor& resident = swap_ ? swap_->staged() : shard_;
  if (resident.defined()) {
    bucket.storage.slice(n * comm_.rank(), n).copyFrom(resident.slice(fb.shardOffset, n));
    allGather(b);
    return;
  }
  // Swapped: the part from its swap buffer, read ahead or read now.
  if (bucket.buffer < 0) readPart(b);
  {
    // The disk's time, not the group's: takeWaitSeconds (exposed communication) leaves it out.
    const trace::Span span("parameter_read_wait", trace::Category::Sync);
    swap_->file().wait(bucket.read);
  }
  const Tensor mine = bucket.storage.slice(n * comm_.rank(), n);
  std::memcpy(mine.raw(), swap_->buffer(bucket.buffer), mine.nbytes());
  freeBuffers_.push_back(bucket.buffer);
  bucket.buffer = -1;
  bucket.read = 0;
  allGather(b);
}

void ParameterGatherer::readPart(int b) {
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  bucket.buffer = freeBuffers_.back();
  freeBuffers_.pop_back();
  bucket.read = swap_->read(b, swap_->buffer(bucket.buffer));
}

void ParameterGatherer::readAhead(int layer, int direction) {
  if (swap_->staged().defined()) return;  // gathers copy from memory then
  const int layers = static_cast<int>(layout_.layerBuckets.size());
  for (; direction != 0 && layer >= 0 && layer < layers; layer += direction) {
    for (int b : layout_.layerBuckets[static_cast<std::size_t>(layer)]) {
      const Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
      if (bucket.storage.defined() || bucket.buffer >= 0) continue;
      if (freeBuffers_.size() <= 1) return;
      readPart(b);
    }
  }
}

void ParameterGatherer::dropReadAhead() {
  for (Bucket& bucket : buckets_) {
    if (bucket.buffer < 0) continue;
    swap_->file().wait(bucket.read);
    freeBuffers_.push_back(bucket.buffer);
    bucket.buffer = -1;
    bucket.read = 0;
  }
}

void ParameterGatherer::allGather(int b) {
  Bucket& bucket = buckets_[static_cast<std::size_t>(b)];
  const std::int64_t n = layout_.partSize(layout_.buckets[static_cast<std::size_t>(b)]);
  const Tensor mine = bucket.storage.slice(n * comm_.rank(), n);
  bucket.handle = comm_.allGatherAsync(mine.raw(), bucket.storage.raw(),
                                       static_cast<std::size_t>(n), bucket.storage.dtype());
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
  if (swap_) dropReadAhead();
  releaseKept();
  if (!pinned_) return;
  pinned_ = false;
  for (std::size_t b = 0; b < buckets_.size(); ++b) release(static_cast<int>(b));
}

}  // namespace parascope
