#include "core/train/sharded_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

ShardedAdamW::ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
                           const kernels::AdamWHyper& hyper, const ParallelStrategy& strategy,
                           std::optional<std::uint64_t> seed, const Tensor& valueShard)
    : layout_(layout), comm_(comm), hyper_(hyper), allocator_(&model.allocator()) {
  valuesSharded_ = valueShard.defined();
  values_ = valuesSharded_ ? valueShard : flattenValues(model, layout, seed);
  for (const FlatBucket& b : layout.buckets) {
    for (int i : b.parameters) {
      const Parameter& p = model.parameters()[static_cast<std::size_t>(i)];
      const FlatLayout::Part part = layout.partOf(i, p.numel(), comm.rank());
      if (part.count > 0) {
        segments_.push_back({layout.offset[static_cast<std::size_t>(i)] + part.local, part.count,
                             part.shard, p.decay, i});
      }
    }
  }
  const bool mixed = values_.dtype() != DType::F32;
  if (!strategy.swapsOptimizer()) {
    allocateState();
    if (mixed) widenMaster(0, layout.shardSize(), master_.data<float>());
    return;
  }
  swap_ = std::make_unique<OptimizerSwap>(optimizerSwapLayout(layout.shardSize(), mixed, strategy),
                                          strategy, model.allocator());
  // The first state, a sub-group at a time: zero moments and the master from the stored values.
  swap_->forEach(OptimizerSwap::Mode::Write, [&](const OptimizerSwap::Group& g) {
    std::fill(g.m, g.m + g.count, 0.0f);
    std::fill(g.v, g.v + g.count, 0.0f);
    if (mixed) widenMaster(g.begin, g.count, g.master);
  });
}

ShardedAdamW::~ShardedAdamW() = default;

void ShardedAdamW::allocateState() {
  const std::int64_t n = layout_.shardSize();
  if (values_.dtype() != DType::F32) {
    master_ = Tensor::empty({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
  }
  m_ = Tensor::zeros({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
  v_ = Tensor::zeros({n}, DType::F32, MemoryCategory::OptimizerState, *allocator_);
}

// The master starts as the stored (rounded) parameters: shard elements [begin, begin + count),
// which each bucket's part holds at its shardOffset.
void ShardedAdamW::widenMaster(std::int64_t begin, std::int64_t count, float* out) const {
  const DType type = values_.dtype();
  for (const FlatBucket& b : layout_.buckets) {
    const std::int64_t n = layout_.partSize(b);
    const std::int64_t lo = std::max(begin, b.shardOffset);
    const std::int64_t hi = std::min(begin + count, b.shardOffset + n);
    if (lo >= hi) continue;
    const std::int64_t from =
        (valuesSharded_ ? b.shardOffset : b.begin + n * comm_.rank()) + (lo - b.shardOffset);
    kernels::widen(values_.slice(from, hi - lo).data<std::uint16_t>(), out + (lo - begin), hi - lo,
                   type);
  }
}

void ShardedAdamW::stageIn() {
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
                          const Tensor& grads, bool gradsAreShard) {
  const std::int64_t g = (gradsAreShard ? s.shardBegin : s.flatBegin) + from;
  const std::int64_t p = (valuesSharded_ ? s.shardBegin : s.flatBegin) + from;
  if (master == nullptr) {
    kernels::adamwUpdate(values_.data<float>() + p, grads.data<float>() + g, m, v, count, h, steps_,
                         static_cast<float>(gradScale));
    return;
  }
  kernels::adamwUpdateMixed(master, values_.data<std::uint16_t>() + p,
                            grads.data<std::uint16_t>() + g, m, v, count, h, steps_,
                            static_cast<float>(gradScale), values_.dtype());
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
  if (swap_) {
    // Each sub-group's share of every segment, as the sub-group passes through memory.
    swap_->forEach(OptimizerSwap::Mode::Update, [&](const OptimizerSwap::Group& g) {
      for (const Segment& s : segments_) {
        const std::int64_t lo = std::max(g.begin, s.shardBegin);
        const std::int64_t hi = std::min(g.begin + g.count, s.shardBegin + s.count);
        if (lo >= hi) continue;
        const std::int64_t at = lo - g.begin;
        update(s, lo - s.shardBegin, hi - lo, g.master != nullptr ? g.master + at : nullptr,
               g.m + at, g.v + at, hyperFor(s, lr), gradScale, grads, gradsAreShard);
        swap_->progress();
      }
    });
  } else {
    for (const Segment& s : segments_) {
      update(s, 0, s.count, master_.defined() ? master_.data<float>() + s.shardBegin : nullptr,
             m_.data<float>() + s.shardBegin, v_.data<float>() + s.shardBegin, hyperFor(s, lr),
             gradScale, grads, gradsAreShard);
    }
  }
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
