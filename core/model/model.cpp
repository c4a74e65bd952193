#include "core/model/model.h"

#include <stdexcept>

namespace parascope {

Parameter& Model::addParameter(const std::string& name, const Shape& shape, ParameterInit init,
                               bool decay) {
  if (find(name) != nullptr) throw std::logic_error("duplicate parameter name " + name);
  Parameter& p = parameters_.emplace_back();
  p.name = name;
  p.shape = shape;
  p.init = init;
  p.decay = decay;
  p.value = Tensor::empty(shape, DType::F32, MemoryCategory::Parameter, *allocator_);
  p.grad = Tensor::zeros(shape, DType::F32, MemoryCategory::Gradient, *allocator_);
  return p;
}

Parameter* Model::find(const std::string& name) {
  for (Parameter& p : parameters_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::int64_t Model::parameterCount() const {
  std::int64_t n = 0;
  for (const Parameter& p : parameters_) n += p.numel();
  return n;
}

void Model::initialize(std::uint64_t seed) {
  for (const Parameter& p : parameters_) p.initialize(seed);
}

void Model::zeroGrad() {
  for (const Parameter& p : parameters_) p.grad.zero();
}

Tensor Model::forwardLayer(std::size_t i, const Tensor& x, const Batch& batch, Activations& keep) {
  for (const LayerHook& hook : forwardHooks_) hook(i, false);
  Tensor y = layers_[i]->forward(x, batch, keep);
  for (const LayerHook& hook : forwardHooks_) hook(i, true);
  return y;
}

MicroBatchResult Model::forwardBackward(const Batch& batch) {
  std::vector<Activations> keep(layers_.size());
  Tensor x = batch.inputs;
  for (std::size_t i = 0; i < layers_.size(); ++i) x = forwardLayer(i, x, batch, keep[i]);
  MicroBatchResult r;
  r.targets = x.numel();
  const float* losses = x.data<float>();
  for (std::int64_t i = 0; i < r.targets; ++i) r.lossSum += losses[i];
  Tensor dy;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    for (const LayerHook& hook : backwardHooks_) hook(i, false);
    dy = layers_[i]->backward(dy, batch, keep[i]);
    keep[i].clear();  // free this layer's activations as soon as they are used
    for (const LayerHook& hook : backwardHooks_) hook(i, true);
  }
  return r;
}

MicroBatchResult Model::evaluate(const Batch& batch) {
  std::vector<Activations> keep(layers_.size());
  Tensor x = batch.inputs;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    x = forwardLayer(i, x, batch, keep[i]);
    if (i + 1 < layers_.size()) keep[i].clear();
  }
  MicroBatchResult r;
  r.targets = x.numel();
  const float* losses = x.data<float>();
  for (std::int64_t i = 0; i < r.targets; ++i) r.lossSum += losses[i];
  if (auto* head = dynamic_cast<const LossLayer*>(layers_.back().get())) {
    r.correct = head->correct(batch, keep.back());
  }
  return r;
}

}  // namespace parascope
