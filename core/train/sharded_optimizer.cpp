#include "core/train/sharded_optimizer.h"

#include <chrono>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

ShardedAdamW::ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
                           const kernels::AdamWHyper& hyper, std::optional<std::uint64_t> seed,
                           const Tensor& valueShard)
    : layout_(layout), comm_(comm), hyper_(hyper) {
  valuesSharded_ = valueShard.defined();
  values_ = valuesSharded_ ? valueShard : flattenValues(model, layout, seed);
  const DType type = values_.dtype();
  if (type != DType::F32) {  // the master starts as the stored (rounded) parameters
    master_ = Tensor::empty({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                            model.allocator());
    for (const FlatBucket& b : layout.buckets) {
      const std::int64_t n = layout.partSize(b);
      const std::int64_t from = valuesSharded_ ? b.shardOffset : b.begin + n * comm.rank();
      kernels::widen(values_.slice(from, n).data<std::uint16_t>(),
                     master_.data<float>() + b.shardOffset, n, type);
    }
  }
  m_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
  v_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
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
}

void ShardedAdamW::update(const Segment& s, const kernels::AdamWHyper& h, double gradScale,
                          const Tensor& grads, bool gradsAreShard) {
  const std::int64_t g = gradsAreShard ? s.shardBegin : s.flatBegin;
  const std::int64_t p = valuesSharded_ ? s.shardBegin : s.flatBegin;
  float* m = m_.data<float>() + s.shardBegin;
  float* v = v_.data<float>() + s.shardBegin;
  if (!master_.defined()) {
    kernels::adamwUpdate(values_.data<float>() + p, grads.data<float>() + g, m, v, s.count, h,
                         steps_, static_cast<float>(gradScale));
    return;
  }
  kernels::adamwUpdateMixed(master_.data<float>() + s.shardBegin, values_.data<std::uint16_t>() + p,
                            grads.data<std::uint16_t>() + g, m, v, s.count, h, steps_,
                            static_cast<float>(gradScale), values_.dtype());
}

double ShardedAdamW::step(double lr, double gradScale, const Tensor& grads, bool gradsAreShard) {
  const trace::Span span("optimizer_step", trace::Category::Optimizer);
  ++steps_;
  for (const Segment& s : segments_) {
    kernels::AdamWHyper h = hyper_;
    h.lr = static_cast<float>(lr);
    if (!s.decay) h.weightDecay = 0.0f;
    update(s, h, gradScale, grads, gradsAreShard);
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
