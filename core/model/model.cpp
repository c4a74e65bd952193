#include "core/model/model.h"

#include <algorithm>
#include <stdexcept>

#include "core/kernels/precision.h"
#include "core/trace/trace.h"

namespace parascope {

double sumOfLosses(const Tensor& losses) {
  const Tensor host = losses.onHost();
  double sum = 0;
  const float* l = host.data<float>();
  for (std::int64_t i = 0; i < host.numel(); ++i) sum += l[i];
  return sum;
}

Model::Model(Allocator& allocator, DType compute, ModelStorage storage)
    : allocator_(&allocator),
      // The CPU's kernels live as long as the program: not owned.
      ops_(std::shared_ptr<void>(), &kernels::cpuOps()),
      compute_(compute),
      storage_(storage) {
  if (!isFloating(compute)) throw std::logic_error("model compute type must be floating");
}

void Model::setOps(std::shared_ptr<const kernels::KernelOps> ops) {
  if (!layers_.empty()) throw std::logic_error("a model's kernels are set before its layers");
  if (ops->device() != allocator_->device())
    throw std::logic_error("a model's kernels must run where its allocator's memory is");
  ops_ = std::move(ops);
}

Parameter& Model::addParameter(const std::string& name, const Shape& shape, ParameterInit init,
                               bool decay, const TensorSplit& split) {
  if (find(name) != nullptr) throw std::logic_error("duplicate parameter name " + name);
  Parameter& p = parameters_.emplace_back();
  byName_.emplace(name, &p);
  p.name = name;
  p.fullShape = shape;
  p.split = split;
  p.shape = split.localShape(shape);
  p.init = init;
  p.decay = decay;
  p.storage = compute_;
  if (storage_.values)
    p.storedValue() = Tensor::empty(p.shape, compute_, MemoryCategory::Parameter, *allocator_);
  if (storage_.gradients)
    p.storedGrad() = Tensor::zeros(p.shape, compute_, MemoryCategory::Gradient, *allocator_);
  return p;
}

Parameter* Model::find(const std::string& name) {
  const auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

std::int64_t Model::parameterCount() const {
  std::int64_t n = 0;
  for (const Parameter& p : parameters_) n += shapeNumel(p.fullShape);
  return n;
}

void Model::initialize(std::uint64_t seed) {
  if (!storage_.values) return;
  for (const Parameter& p : parameters_) {
    p.initialValues(seed, p.storedValue());
    if (storage_.gradients) p.storedGrad().zero();
  }
}

void Model::zeroGrad() {
  for (Parameter& p : parameters_) {
    p.storedGrad().zero();
    p.gradStale = false;
  }
}

bool Model::startsStale(const Parameter& p) {
  return p.gradWrittenWhole && p.storage == DType::F32;
}

void Model::startGradients() {
  for (Parameter& p : parameters_) {
    p.gradStale = startsStale(p);
    if (!p.gradStale) p.storedGrad().zero();
  }
}

void Model::settleGradients() {
  for (Parameter& p : parameters_) settleGradient(p);
}

void Model::settleGradient(Parameter& p) {
  if (p.gradStale) p.storedGrad().zero();
  p.gradStale = false;
}

void Model::roundToCompute(Tensor& t) const {
  if (!t.defined() || t.dtype() != DType::F32) return;
  ops_->roundTo(t.data<float>(), t.numel(), compute_);
}

void Model::narrowKept(Activations& keep, const Batch& batch, const Tensor& y) const {
  auto storageOf = [](const Tensor& t) { return t.defined() ? t.raw() : nullptr; };
  std::vector<std::pair<const void*, Tensor>> narrowed;
  for (std::size_t i = 0; i < keep.saved.size(); ++i) {
    Tensor& t = keep.saved[i];
    if (!t.defined() || t.dtype() != DType::F32 || keep.isExact(i)) continue;
    const void* at = t.raw();
    if (at == storageOf(batch.inputs) || at == storageOf(y)) {
      // Held in f32 by the step or the next layer anyway: a copy would only add to it.
      roundToCompute(t);
      continue;
    }
    auto same = std::find_if(narrowed.begin(), narrowed.end(),
                             [&](const auto& n) { return n.first == at; });
    if (same == narrowed.end()) {
      Tensor low = Tensor::empty(t.shape(), compute_, MemoryCategory::Activation, *allocator_);
      ops_->narrow(t.data<float>(), low.data<std::uint16_t>(), t.numel(), compute_);
      same = narrowed.insert(narrowed.end(), {at, std::move(low)});
    }
    // The f32 tensor goes now, before the next one is narrowed; the layer's input when its
    // caller moves on (after the layer, or after the pipeline chunk it entered).
    t = same->second;
  }
}

void Model::widenKept(Activations& keep) const {
  if (!mixedPrecision()) return;
  const trace::Span span("activations_to_f32", trace::Category::Compute);
  std::vector<std::pair<const void*, Tensor>> widened;
  for (std::size_t i = 0; i < keep.saved.size(); ++i) {
    Tensor& t = keep.saved[i];
    if (!t.defined() || t.dtype() != compute_ || keep.isExact(i)) continue;
    const void* at = t.raw();
    auto same =
        std::find_if(widened.begin(), widened.end(), [&](const auto& w) { return w.first == at; });
    if (same == widened.end()) {
      Tensor wide = Tensor::empty(t.shape(), DType::F32, MemoryCategory::Activation, *allocator_);
      ops_->widen(t.data<std::uint16_t>(), wide.data<float>(), t.numel(), compute_);
      same = widened.insert(widened.end(), {at, std::move(wide)});
    }
    t = same->second;
  }
}

void Model::beginWorkingCopies(std::size_t i, bool backward) {
  const trace::Span span("parameters_to_f32", trace::Category::Compute);
  for (Parameter* p : layers_[i]->parameters()) {
    if (!p->value.defined()) {  // not held by materializeValues() or an earlier entry
      p->value = Tensor::empty(p->shape, DType::F32, MemoryCategory::Workspace, *allocator_);
      ops_->widen(p->lowValue.data<std::uint16_t>(), p->value.data<float>(), p->numel(), compute_);
      working_.push_back(p);
    }
    if (backward && !p->grad.defined()) {
      p->grad = Tensor::zeros(p->shape, DType::F32, MemoryCategory::Workspace, *allocator_);
      workingGrads_.push_back(p);
    }
  }
}

void Model::endWorkingCopies(bool backward) {
  if (backward) {
    const trace::Span span("gradients_to_low_precision", trace::Category::Compute);
    for (Parameter* p : workingGrads_) {
      ops_->accumulateRounded(p->lowGrad.data<std::uint16_t>(), p->grad.data<float>(), p->numel(),
                              compute_);
      p->grad = Tensor();
    }
    workingGrads_.clear();
  }
  for (Parameter* p : working_) p->value = Tensor();
  working_.clear();
}

Tensor Model::forwardLayer(std::size_t i, const Tensor& x, const Batch& batch, Activations& keep,
                           bool keepWide) {
  for (const LayerHook& hook : forwardHooks_) hook(i, false);
  if (mixedPrecision()) beginWorkingCopies(i, false);
  Tensor y = layers_[i]->forward(x, batch, keep);
  if (mixedPrecision()) {
    endWorkingCopies(false);
    const trace::Span span("round_activations", trace::Category::Compute);
    // Per-target losses stay f32: the loss is reduced in f32, as autocast computes it.
    if (dynamic_cast<const LossLayer*>(layers_[i].get()) == nullptr) roundToCompute(y);
    if (keepWide) {
      for (std::size_t k = 0; k < keep.saved.size(); ++k)
        if (!keep.isExact(k)) roundToCompute(keep.saved[k]);
    } else {
      narrowKept(keep, batch, y);
    }
  }
  for (const LayerHook& hook : forwardHooks_) hook(i, true);
  return y;
}

template <class F>
auto Model::backwardPass(std::size_t i, F pass) {
  for (const LayerHook& hook : backwardPassHooks_) hook(i, false);
  auto result = pass();
  for (const LayerHook& hook : backwardPassHooks_) hook(i, true);
  return result;
}

Tensor Model::backwardLayer(std::size_t i, const Tensor& dy, const Batch& batch,
                            Activations& keep) {
  return backwardPass(i, [&] {
    if (!mixedPrecision()) return layers_[i]->backward(dy, batch, keep);
    widenKept(keep);
    beginWorkingCopies(i, true);
    Tensor dx = layers_[i]->backward(dy, batch, keep);
    endWorkingCopies(true);
    const trace::Span span("round_activations", trace::Category::Compute);
    roundToCompute(dx);
    return dx;
  });
}

Tensor Model::backwardInputLayer(std::size_t i, const Tensor& dy, const Batch& batch,
                                 Activations& keep) {
  return backwardPass(i, [&] {
    Layer& layer = *layers_[i];
    if (!mixedPrecision()) return layer.backwardInput(dy, batch, keep);
    const bool gradients = !layer.splitsBackward();
    widenKept(keep);
    beginWorkingCopies(i, gradients);
    Tensor dx = layer.backwardInput(dy, batch, keep);
    endWorkingCopies(gradients);
    const trace::Span span("round_activations", trace::Category::Compute);
    roundToCompute(dx);
    return dx;
  });
}

void Model::backwardWeightLayer(std::size_t i, const Batch& batch, Activations& keep) {
  backwardPass(i, [&] {
    Layer& layer = *layers_[i];
    if (!mixedPrecision()) {
      layer.backwardWeight(batch, keep);
      return 0;
    }
    beginWorkingCopies(i, true);
    layer.backwardWeight(batch, keep);
    endWorkingCopies(true);
    return 0;
  });
}

void Model::materializeValues() {
  if (!mixedPrecision()) return;
  for (Parameter& p : parameters_) {
    if (p.value.defined()) continue;
    p.value = Tensor::empty(p.shape, DType::F32, MemoryCategory::Workspace, *allocator_);
    ops_->widen(p.lowValue.data<std::uint16_t>(), p.value.data<float>(), p.numel(), compute_);
    held_.push_back(&p);
  }
}

void Model::releaseValues() {
  for (Parameter* p : held_) p->value = Tensor();
  held_.clear();
}

MicroBatchResult Model::forwardBackward(const Batch& batch) {
  std::vector<Activations> keep(layers_.size());
  Tensor x = batch.inputs;
  // The last layer's backward comes at once.
  for (std::size_t i = 0; i < layers_.size(); ++i)
    x = forwardLayer(i, x, batch, keep[i], i + 1 == layers_.size());
  MicroBatchResult r;
  r.targets = x.numel();
  r.lossSum = sumOfLosses(x);
  Tensor dy;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    for (const LayerHook& hook : backwardHooks_) hook(i, false);
    dy = backwardLayer(i, dy, batch, keep[i]);
    keep[i].clear();  // free this layer's activations as soon as they are used
    for (const LayerHook& hook : backwardHooks_) hook(i, true);
  }
  return r;
}

MicroBatchResult Model::evaluate(const Batch& batch) {
  std::vector<Activations> keep(layers_.size());
  Tensor x = batch.inputs;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    x = forwardLayer(i, x, batch, keep[i], true);  // dropped, or read by correct() at once
    if (i + 1 < layers_.size()) keep[i].clear();
  }
  MicroBatchResult r;
  r.targets = x.numel();
  r.lossSum = sumOfLosses(x);
  if (auto* head = dynamic_cast<const LossLayer*>(layers_.back().get())) {
    r.correct = head->correct(batch, keep.back());
  }
  return r;
}

}  // namespace parascope
