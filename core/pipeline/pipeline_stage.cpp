// A pipeline chunk's layers per micro-batch: forward with the chosen recompute, backward whole or
// in zero-bubble halves, and the gradient hooks around each layer's weight passes.
#include "core/pipeline/pipeline_stage.h"

#include <stdexcept>
#include <string>

namespace parascope {

PipelineStage::PipelineStage(Model& model, int begin, int end, Recompute recompute,
                             int passesPerRound)
    : model_(model),
      begin_(begin),
      end_(end),
      recompute_(recompute),
      passesPerRound_(passesPerRound) {
  for (int i = 0; i < size(); ++i)
    layer(i).setSelectiveRecompute(recompute == Recompute::Selective);
}

void PipelineStage::beginStep() {
  fullPasses_ = weightPasses_ = 0;
  saved_.clear();
}

Tensor PipelineStage::forward(int microBatch, const Tensor& x, const Batch& batch,
                              bool backwardNext) {
  auto [it, fresh] = saved_.try_emplace(microBatch);
  if (!fresh) {
    throw std::logic_error("pipeline stage: forward of micro-batch " + std::to_string(microBatch) +
                           " runs twice in a step");
  }
  Saved& s = it->second;
  s.keep.resize(static_cast<std::size_t>(size()));
  if (recompute_ == Recompute::Full) s.inputs.resize(static_cast<std::size_t>(size()));
  Tensor y = x;
  for (int i = 0; i < size(); ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (recompute_ == Recompute::Full) {
      // Only the input stays; the layer's saved state is dropped right after it ran.
      s.inputs[at] = y;
      Activations scratch;
      y = model_.forwardLayer(index(i), y, batch, scratch, true);
    } else {
      y = model_.forwardLayer(index(i), y, batch, s.keep[at], backwardNext && i + 1 == size());
    }
  }
  return y;
}

void PipelineStage::restore(Saved& s, int i, const Batch& batch) {
  if (recompute_ != Recompute::Full) return;
  const auto at = static_cast<std::size_t>(i);
  model_.forwardLayer(index(i), s.inputs[at], batch, s.keep[at], true);  // its backward is next
  s.inputs[at] = Tensor();
}

template <class F>
auto PipelineStage::gradientPass(int i, bool writes, bool last, F pass) {
  if (writes) model_.notifyBackward(index(i), false);
  auto result = pass();
  if (writes && last) model_.notifyBackward(index(i), true);
  return result;
}

Tensor PipelineStage::backward(int microBatch, const Tensor& dy, const Batch& batch) {
  Saved& s = saved_.at(microBatch);
  const bool last = ++fullPasses_ % passesPerRound_ == 0;
  Tensor d = dy;
  for (int i = size(); i-- > 0;) {
    restore(s, i, batch);
    Activations& keep = s.keep[static_cast<std::size_t>(i)];
    d = gradientPass(i, true, last, [&] { return model_.backwardLayer(index(i), d, batch, keep); });
    keep.clear();
  }
  saved_.erase(microBatch);
  return d;
}

Tensor PipelineStage::backwardInput(int microBatch, const Tensor& dy, const Batch& batch) {
  Saved& s = saved_.at(microBatch);
  const bool last = ++fullPasses_ % passesPerRound_ == 0;
  Tensor d = dy;
  for (int i = size(); i-- > 0;) {
    restore(s, i, batch);
    Activations& keep = s.keep[static_cast<std::size_t>(i)];
    // A layer that cannot split accumulates its weight gradients here.
    const bool writes = !layer(i).splitsBackward();
    d = gradientPass(i, writes, last,
                     [&] { return model_.backwardInputLayer(index(i), d, batch, keep); });
  }
  return d;
}

void PipelineStage::backwardWeight(int microBatch, const Batch& batch) {
  Saved& s = saved_.at(microBatch);
  const bool last = ++weightPasses_ % passesPerRound_ == 0;
  for (int i = size(); i-- > 0;) {
    Activations& keep = s.keep[static_cast<std::size_t>(i)];
    gradientPass(i, layer(i).splitsBackward(), last, [&] {
      model_.backwardWeightLayer(index(i), batch, keep);
      return 0;
    });
    keep.clear();
  }
  saved_.erase(microBatch);
}

Tensor PipelineStage::evaluate(const Tensor& x, const Batch& batch, Activations* last) {
  Tensor y = x;
  for (int i = 0; i < size(); ++i) {
    Activations keep;
    y = model_.forwardLayer(index(i), y, batch, keep, true);  // dropped, or read by correct()
    if (last != nullptr && i + 1 == size()) *last = std::move(keep);
  }
  return y;
}

}  // namespace parascope
