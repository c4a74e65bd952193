#include "core/train/sharded_optimizer.h"

#include <algorithm>

#include "core/trace/trace.h"

namespace parascope {

ShardedAdamW::ShardedAdamW(Model& model, Tensor flatValues, const FlatLayout& layout,
                           Communicator& comm, const kernels::AdamWHyper& hyper)
    : model_(model), flat_(std::move(flatValues)), layout_(layout), comm_(comm), hyper_(hyper) {
  m_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
  v_ = Tensor::zeros({layout.shardSize()}, DType::F32, MemoryCategory::OptimizerState,
                     model.allocator());
}

void ShardedAdamW::step(double lr, double gradScale) {
  const trace::Span span("optimizer_step", trace::Category::Optimizer);
  ++steps_;
  const std::int64_t S = layout_.shardSize(), lo = S * comm_.rank(), hi = lo + S;
  std::size_t i = 0;
  // The parameters (or parts) inside [lo, hi) of the flat buffer, each with its own decay.
  for (const Parameter& p : model_.parameters()) {
    const std::int64_t begin = std::max(lo, layout_.offset[i]);
    const std::int64_t end = std::min(hi, layout_.offset[i] + p.numel());
    const std::int64_t skip = begin - layout_.offset[i];
    ++i;
    if (begin >= end) continue;
    kernels::AdamWHyper h = hyper_;
    h.lr = static_cast<float>(lr);
    if (!p.decay) h.weightDecay = 0.0f;
    kernels::adamwUpdate(p.value.data<float>() + skip, p.grad.data<float>() + skip,
                         m_.data<float>() + (begin - lo), v_.data<float>() + (begin - lo),
                         end - begin, h, steps_, static_cast<float>(gradScale));
  }
  float* all = flat_.data<float>();
  comm_.allGather(all + lo, all, static_cast<std::size_t>(S), DType::F32);
}

}  // namespace parascope
