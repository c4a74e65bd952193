#include "core/train/optimizer.h"

#include <cmath>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

AdamW::AdamW(Model& model, const kernels::AdamWHyper& hyper) : model_(model), hyper_(hyper) {
  for (const Parameter& p : model.parameters()) {
    m_.push_back(
        Tensor::zeros(p.shape, DType::F32, MemoryCategory::OptimizerState, model.allocator()));
    v_.push_back(
        Tensor::zeros(p.shape, DType::F32, MemoryCategory::OptimizerState, model.allocator()));
    if (model.mixedPrecision()) {  // the master starts as the stored (rounded) parameter
      Tensor& master = master_.emplace_back(
          Tensor::empty(p.shape, DType::F32, MemoryCategory::OptimizerState, model.allocator()));
      model.ops().widen(p.lowValue.data<std::uint16_t>(), master.data<float>(), p.numel(),
                        p.storage);
    }
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
    if (master_.empty()) {
      model_.ops().adamwUpdate(p.value.data<float>(), p.grad.data<float>(), m_[i].data<float>(),
                               v_[i].data<float>(), p.numel(), h, steps_,
                               static_cast<float>(gradScale));
    } else {
      model_.ops().adamwUpdateMixed(master_[i].data<float>(), p.lowValue.data<std::uint16_t>(),
                                    p.lowGrad.data<std::uint16_t>(), m_[i].data<float>(),
                                    v_[i].data<float>(), p.numel(), h, steps_,
                                    static_cast<float>(gradScale), p.storage);
    }
    ++i;
  }
}

}  // namespace parascope
