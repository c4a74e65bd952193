#include "core/train/optimizer.h"

#include <cmath>

#include "core/kernels/grad_clip.h"
#include "core/trace/trace.h"

namespace parascope {

AdamW::AdamW(Model& model, const kernels::AdamWHyper& hyper) : model_(model), hyper_(hyper) {
  for (const Parameter& p : model.parameters()) {
    m_.push_back(
        Tensor::zeros(p.shape, DType::F32, MemoryCategory::OptimizerState, model.allocator()));
    v_.push_back(
        Tensor::zeros(p.shape, DType::F32, MemoryCategory::OptimizerState, model.allocator()));
  }
}

void AdamW::step(double lr, double gradScale) {
  const trace::Span span("optimizer_step", trace::Category::Optimizer);
  ++steps_;
  std::size_t i = 0;
  for (const Parameter& p : model_.parameters()) {
    kernels::AdamWHyper h = hyper_;
    h.lr = static_cast<float>(lr);
    if (!p.decay) h.weightDecay = 0.0f;
    kernels::adamwUpdate(p.value.data<float>(), p.grad.data<float>(), m_[i].data<float>(),
                         v_[i].data<float>(), p.numel(), h, steps_, static_cast<float>(gradScale));
    ++i;
  }
}

double gradientNorm(const Model& model) {
  double sq = 0;
  for (const Parameter& p : model.parameters()) {
    sq += kernels::sumOfSquares(p.grad.data<float>(), p.numel());
  }
  return std::sqrt(sq);
}

}  // namespace parascope
