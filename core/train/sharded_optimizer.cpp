#include "core/train/sharded_optimizer.h"

#include <algorithm>
#include <chrono>

#include "core/trace/trace.h"

namespace parascope {

ShardedAdamW::ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
                           const kernels::AdamWHyper& hyper, const Tensor& valueShard)
    : layout_(layout), comm_(comm), hyper_(hyper) {
  valuesSharded_ = valueShard.defined();
  values_ = valuesSharded_ ? valueShard : flattenValues(model, layout);
  m_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
  v_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
  for (const FlatBucket& b : layout.buckets) {
    const std::int64_t n = layout.partSize(b), lo = b.begin + n * comm.rank(), hi = lo + n;
    for (int i : b.parameters) {
      const Parameter& p = model.parameters()[static_cast<std::size_t>(i)];
      const std::int64_t at = layout.offset[static_cast<std::size_t>(i)];
      const std::int64_t begin = std::max(lo, at), end = std::min(hi, at + p.numel());
      if (begin < end)
        segments_.push_back({begin, end - begin, b.shardOffset + begin - lo, p.decay});
    }
  }
}

double ShardedAdamW::step(double lr, double gradScale, const float* grads, bool gradsAreShard) {
  const trace::Span span("optimizer_step", trace::Category::Optimizer);
  ++steps_;
  float* values = values_.data<float>();
  for (const Segment& s : segments_) {
    kernels::AdamWHyper h = hyper_;
    h.lr = static_cast<float>(lr);
    if (!s.decay) h.weightDecay = 0.0f;
    const float* g = grads + (gradsAreShard ? s.shardBegin : s.flatBegin);
    kernels::adamwUpdate(values + (valuesSharded_ ? s.shardBegin : s.flatBegin), g,
                         m_.data<float>() + s.shardBegin, v_.data<float>() + s.shardBegin, s.count,
                         h, steps_, static_cast<float>(gradScale));
  }
  if (valuesSharded_) return 0.0;  // ZeRO-3 gathers before each layer instead
  std::vector<CommHandle> gathers;
  for (const FlatBucket& b : layout_.buckets) {
    const std::int64_t n = layout_.partSize(b);
    float* all = values + b.begin;
    gathers.push_back(
        comm_.allGatherAsync(all + n * comm_.rank(), all, static_cast<std::size_t>(n), DType::F32));
  }
  const auto start = std::chrono::steady_clock::now();
  for (CommHandle& h : gathers) h.wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace parascope
