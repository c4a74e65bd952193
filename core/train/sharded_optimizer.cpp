#include "core/train/sharded_optimizer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

ShardedAdamW::ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
                           const kernels::AdamWHyper& hyper, const ParallelStrategy& strategy,
                           std::optional<std::uint64_t> seed, const Tensor& valueShard,
                           ParameterSwap* valueSwap)
    : layout_(layout),
      comm_(comm),
      hyper_(hyper),
      allocator_(&model.allocator()),
      ops_(&model.ops()) {
  valueSwap_ = valueSwap;
  valuesSharded_ = valueShard.defined() || valueSwap != nullptr;
  stored_ = model.computeType();
  if (valueSwap == nullptr)
    values_ = valuesSharded_ ? valueShard : flattenValues(model, layout, seed);
  if (strategy.offloadOptimizer.device == OffloadDevice::Cpu &&
      model.allocator().deviceMemory() != nullptr) {
    device_ = model.allocator().deviceMemory();
    allocator_ = &defaultAllocator();
    ops_ = &kernels::cpuOps();
    // The host's copies of the shard's values and gradients, each on whole pages of their own
    // inside one block: page-locking works on pages, and a page two registrations shared (another
    // rank's buffers, say) would refuse the second.
    const std::int64_t n = layout.shardSize();
    const auto size = static_cast<std::int64_t>(dtypeSize(stored_));
    const std::int64_t page = sysconf(_SC_PAGESIZE) / size;  // in elements
    const std::int64_t part = (n + page - 1) / page * page;
    hostBlock_ =
        Tensor::empty({2 * part + 2 * page}, stored_, MemoryCategory::OptimizerState, *allocator_);
    const auto at = reinterpret_cast<std::uintptr_t>(hostBlock_.raw());
    const auto pageBytes = static_cast<std::uintptr_t>(page * size);
    const auto lead = static_cast<std::int64_t>((pageBytes - at % pageBytes) % pageBytes) / size;
    hostValues_ = hostBlock_.slice(lead, n);
    hostGrads_ = hostBlock_.slice(lead + part, n);
    if (strategy.offloadOptimizer.pinMemory) {
      device_->pin(hostValues_.raw(), static_cast<std::size_t>(2 * part * size));
      pinned_ = hostValues_.raw();
    }
    hostValuesStale_ = true;
    readHostValues();
    down_.resize(layout.buckets.size());
    started_.assign(layout.buckets.size(), 0);
  }
  for (std::size_t b = 0; b < layout.buckets.size(); ++b) {
    for (int i : layout.buckets[b].parameters) {
      const Parameter& p = model.parameters()[static_cast<std::size_t>(i)];
      const FlatLayout::Part part = layout.partOf(i, p.numel(), comm.rank());
      if (part.count > 0) {
        segments_.push_back({layout.offset[static_cast<std::size_t>(i)] + part.local, part.count,
                             part.shard, p.decay, i, static_cast<int>(b)});
      }
    }
  }
  const bool mixed = stored_ != DType::F32;
  // A swapped parameter shard is read a bucket's part at a time for the masters.
  std::optional<ParameterSwap::Sweep> sweep;
  if (mixed && valueSwap_ != nullptr) sweep.emplace(*valueSwap_, false);
  ParameterSwap::Sweep* parts = sweep ? &*sweep : nullptr;
  if (!strategy.swapsOptimizer()) {
    allocateState();
    if (mixed) widenMaster(0, layout.shardSize(), master_.data<float>(), parts);
  } else {
    swap_ = std::make_unique<OptimizerSwap>(
        optimizerSwapLayout(layout.shardSize(), mixed, strategy), strategy, model.allocator());
    // The first state, a sub-group at a time: zero moments and the master from the stored
    // values.
    swap_->forEach(OptimizerSwap::Mode::Write, [&](const OptimizerSwap::Group& g) {
      std::fill(g.m, g.m + g.count, 0.0f);
      std::fill(g.v, g.v + g.count, 0.0f);
      if (mixed) widenMaster(g.begin, g.count, g.master, parts);
    });
  }
  if (sweep) sweep->finish();
}

ShardedAdamW::~ShardedAdamW() {
  finishCopies();
  if (pinned_ != nullptr) device_->unpin(pinned_);
}

void ShardedAdamW::finishCopies() noexcept {
  for (std::size_t b = 0; b < started_.size(); ++b) {
    if (!started_[b]) continue;
    started_[b] = 0;
    try {
      device_->finish(down_[b]);
    } catch (...) {
      return;  // the device is lost and runs none of the others
    }
    down_[b] = nullptr;
  }
}

void ShardedAdamW::gradientsFinal(int b, const Tensor& grads, bool gradsAreShard) {
  // A step skipped on an overflow left its copy: it lands before this one starts.
  if (started_[static_cast<std::size_t>(b)]) device_->finish(down_[static_cast<std::size_t>(b)]);
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  const std::int64_t n = layout_.partSize(fb);
  down_[static_cast<std::size_t>(b)] = device_->copyAsync(
      hostGrads_.slice(fb.shardOffset, n).raw(), devicePart(grads, gradsAreShard, b),
      static_cast<std::size_t>(n) * dtypeSize(stored_));
  started_[static_cast<std::size_t>(b)] = 1;
}

char* ShardedAdamW::devicePart(const Tensor& all, bool sharded, int b) const {
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  const std::int64_t n = layout_.partSize(fb);
  return static_cast<char*>(
      all.slice(sharded ? fb.shardOffset : fb.begin + n * comm_.rank(), n).raw());
}

void ShardedAdamW::readHostValues() {
  if (!hostValuesStale_) return;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const FlatBucket& fb = layout_.buckets[b];
    const std::int64_t n = layout_.partSize(fb);
    device_->copy(hostValues_.slice(fb.shardOffset, n).raw(),
                  devicePart(values_, valuesSharded_, static_cast<int>(b)),
                  static_cast<std::size_t>(n) * dtypeSize(stored_));
  }
  hostValuesStale_ = false;
}

void ShardedAdamW::allocateState() {
  const std::int64_t n = layout_.shardSize();
  if (stored_ != DType::F32) {
    master_ = Tensor::empty({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
  }
  m_ = Tensor::zeros({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
  v_ = Tensor::zeros({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
}

char* ShardedAdamW::valuesPart(int b, ParameterSwap::Sweep* sweep) const {
  if (sweep != nullptr) return sweep->record(b);
  if (device_ == nullptr) return devicePart(values_, valuesSharded_, b);
  const FlatBucket& fb = layout_.buckets[static_cast<std::size_t>(b)];
  return static_cast<char*>(hostValues_.slice(fb.shardOffset, layout_.partSize(fb)).raw());
}

// The master starts as the stored (rounded) parameters: shard elements [begin, begin + count),
// which each bucket's part holds at its shardOffset.
void ShardedAdamW::widenMaster(std::int64_t begin, std::int64_t count, float* out,
                               ParameterSwap::Sweep* sweep) const {
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const FlatBucket& fb = layout_.buckets[b];
    const std::int64_t lo = std::max(begin, fb.shardOffset);
    const std::int64_t hi = std::min(begin + count, fb.shardOffset + layout_.partSize(fb));
    if (lo >= hi) continue;
    const auto* part =
        reinterpret_cast<const std::uint16_t*>(valuesPart(static_cast<int>(b), sweep));
    ops_->widen(part + (lo - fb.shardOffset), out + (lo - begin), hi - lo, stored_);
  }
}

void ShardedAdamW::stageIn() {
  // What a load or a switch writes goes into the device's values.
  if (device_ != nullptr) hostValuesStale_ = true;
  if (valueSwap_ != nullptr && !values_.defined()) {
    valueSwap_->stageIn(stored_);
    values_ = valueSwap_->staged();
  }
  if (!swap_ || m_.defined()) return;
  allocateState();
  swap_->forEach(OptimizerSwap::Mode::Read, [&](const OptimizerSwap::Group& g) {
    const std::size_t bytes = static_cast<std::size_t>(g.count) * sizeof(float);
    std::memcpy(m_.data<float>() + g.begin, g.m, bytes);
    std::memcpy(v_.data<float>() + g.begin, g.v, bytes);
    if (g.master != nullptr) std::memcpy(master_.data<float>() + g.begin, g.master, bytes);
  });
}

void ShardedAdamW::stageOut() {
  if (valueSwap_ != nullptr && values_.defined()) {
    values_ = Tensor();
    valueSwap_->stageOut();
  }
  if (!swap_ || !m_.defined()) return;
  swap_->forEach(OptimizerSwap::Mode::Write, [&](const OptimizerSwap::Group& g) {
    const std::size_t bytes = static_cast<std::size_t>(g.count) * sizeof(float);
    std::memcpy(g.m, m_.data<float>() + g.begin, bytes);
    std::memcpy(g.v, v_.data<float>() + g.begin, bytes);
    if (g.master != nullptr) std::memcpy(g.master, master_.data<float>() + g.begin, bytes);
  });
  m_ = Tensor();
  v_ = Tensor();
  master_ = Tensor();
}

// Elements [from, from + count) of segment s, whose state starts at m, v and master (null in
// full precision).
void ShardedAdamW::update(const Segment& s, std::int64_t from, std::int64_t count, float* master,
                          float* m, float* v, const kernels::AdamWHyper& h, double gradScale,
                          const Tensor& grads, bool gradsAreShard, ParameterSwap::Sweep* sweep) {
  const std::int64_t g = (gradsAreShard ? s.shardBegin : s.flatBegin) + from;
  // Within the segment's bucket part (which holds the whole segment).
  const std::int64_t p =
      s.shardBegin - layout_.buckets[static_cast<std::size_t>(s.bucket)].shardOffset + from;
  char* part = valuesPart(s.bucket, sweep);
  if (master == nullptr) {
    ops_->adamwUpdate(reinterpret_cast<float*>(part) + p, grads.data<float>() + g, m, v, count, h,
                      steps_, static_cast<float>(gradScale));
    return;
  }
  ops_->adamwUpdateMixed(master, reinterpret_cast<std::uint16_t*>(part) + p,
                         grads.data<std::uint16_t>() + g, m, v, count, h, steps_,
                         static_cast<float>(gradScale), stored_);
}

void ShardedAdamW::stepOnHost(double lr, double gradScale, const Tensor& grads,
                              bool gradsAreShard) {
  readHostValues();
  const std::size_t buckets = layout_.buckets.size();
  std::vector<std::shared_ptr<void>> up(buckets);
  try {
    // Buckets no reduction announced (a step without a reducer's hook) start now.
    for (std::size_t b = 0; b < buckets; ++b)
      if (!started_[b]) gradientsFinal(static_cast<int>(b), grads, gradsAreShard);
    std::size_t next = 0;  // segments_ runs bucket by bucket
    for (std::size_t b = 0; b < buckets; ++b) {
      device_->finish(down_[b]);
      down_[b] = nullptr;
      started_[b] = 0;
      for (; next < segments_.size() && segments_[next].bucket == static_cast<int>(b); ++next) {
        const Segment& s = segments_[next];
        update(s, 0, s.count, master_.defined() ? master_.data<float>() + s.shardBegin : nullptr,
               m_.data<float>() + s.shardBegin, v_.data<float>() + s.shardBegin, hyperFor(s, lr),
               gradScale, hostGrads_, true, nullptr);
      }
      const FlatBucket& fb = layout_.buckets[b];
      const std::int64_t n = layout_.partSize(fb);
      up[b] = device_->copyAsync(devicePart(values_, valuesSharded_, static_cast<int>(b)),
                                 hostValues_.slice(fb.shardOffset, n).raw(),
                                 static_cast<std::size_t>(n) * dtypeSize(stored_));
    }
    for (const std::shared_ptr<void>& copy : up) device_->finish(copy);
  } catch (...) {
    // No copy may still run into or out of memory the unwinding frees. A wait that fails means
    // the device is lost and runs none of the others; the first error is the one to report.
    const std::exception_ptr error = std::current_exception();
    finishCopies();
    try {
      for (const std::shared_ptr<void>& copy : up) device_->finish(copy);
    } catch (...) {
      std::rethrow_exception(error);
    }
    throw;
  }
}

kernels::AdamWHyper ShardedAdamW::hyperFor(const Segment& s, double lr) const {
  kernels::AdamWHyper h = hyper_;
  h.lr = static_cast<float>(lr);
  if (!s.decay) h.weightDecay = 0.0f;
  return h;
}

double ShardedAdamW::step(double lr, double gradScale, const Tensor& grads, bool gradsAreShard) {
  const trace::Span span("optimizer_step", trace::Category::Optimizer);
  ++steps_;
  stageOut();  // what a load wrote into the staged state goes back to the swap file first
  std::optional<ParameterSwap::Sweep> sweep;
  if (valueSwap_ != nullptr) sweep.emplace(*valueSwap_, true);
  ParameterSwap::Sweep* parts = sweep ? &*sweep : nullptr;
  if (device_ != nullptr) {
    stepOnHost(lr, gradScale, grads, gradsAreShard);
  } else if (swap_) {
    // Each sub-group's share of every segment, as the sub-group passes through memory.
    swap_->forEach(OptimizerSwap::Mode::Update, [&](const OptimizerSwap::Group& g) {
      for (const Segment& s : segments_) {
        const std::int64_t lo = std::max(g.begin, s.shardBegin);
        const std::int64_t hi = std::min(g.begin + g.count, s.shardBegin + s.count);
        if (lo >= hi) continue;
        const std::int64_t at = lo - g.begin;
        update(s, lo - s.shardBegin, hi - lo, g.master != nullptr ? g.master + at : nullptr,
               g.m + at, g.v + at, hyperFor(s, lr), gradScale, grads, gradsAreShard, parts);
        swap_->progress();
      }
    });
  } else {
    for (const Segment& s : segments_) {
      update(s, 0, s.count, master_.defined() ? master_.data<float>() + s.shardBegin : nullptr,
             m_.data<float>() + s.shardBegin, v_.data<float>() + s.shardBegin, hyperFor(s, lr),
             gradScale, grads, gradsAreShard, parts);
    }
  }
  if (sweep) sweep->finish();
  if (valuesSharded_) return 0.0;  // ZeRO-3 gathers before each layer instead
  std::vector<CommHandle> gathers;
  for (const FlatBucket& b : layout_.buckets) {
    const std::int64_t n = layout_.partSize(b);
    const Tensor all = values_.slice(b.begin, b.count);
    gathers.push_back(comm_.allGatherAsync(all.slice(n * comm_.rank(), n).raw(), all.raw(),
                                           static_cast<std::size_t>(n), values_.dtype()));
  }
  const auto start = std::chrono::steady_clock::now();
  for (CommHandle& h : gathers) h.wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace parascope
