// One model chunk of a pipeline rank: a contiguous range of the rank's Model layers run forward
// and backward (full, or zero-bubble's input and weight halves) per micro-batch, holding each
// micro-batch's saved activations in between, with activation recompute (none, selective, full).
// The model's backward hooks fire around each layer's last weight-gradient pass of a reduction
// round (the step, or each micro-batch when every micro-batch is reduced), when its gradients are
// final for the round. No transfers and no scheduling here (step_executor.h).
#pragma once

#include <map>
#include <vector>

#include "core/model/model.h"
#include "core/parallel/pipeline_layout.h"

namespace parascope {

class PipelineStage {
 public:
  // Layers [begin, end) of `model` (the rank's model); passesPerRound: micro-batches whose
  // gradients each reduction round carries (all of the step's, or 1).
  PipelineStage(Model& model, int begin, int end, Recompute recompute, int passesPerRound);

  void beginStep();  // every micro-batch's weight gradients are still to come
  // x: the stage's input (the batch's inputs for the first stage). Returns the output (the
  // per-target losses for the last stage of the model).
  // backwardNext: this micro-batch's backward runs next (backwardFollows), so the last layer's
  // state stays f32 under mixed precision rather than narrowed and widened back at once.
  Tensor forward(int microBatch, const Tensor& x, const Batch& batch, bool backwardNext);
  // dy: gradient w.r.t. the output (undefined for the model's last stage). Returns the input
  // gradient (undefined for the model's first stage).
  Tensor backward(int microBatch, const Tensor& dy, const Batch& batch);
  Tensor backwardInput(int microBatch, const Tensor& dy, const Batch& batch);
  void backwardWeight(int microBatch, const Batch& batch);
  // Forward only (evaluation): nothing is kept except the last layer's state, handed back for
  // LossLayer::correct when `last` is given.
  Tensor evaluate(const Tensor& x, const Batch& batch, Activations* last);

 private:
  struct Saved {
    std::vector<Activations> keep;  // per layer of the stage
    std::vector<Tensor> inputs;     // per layer: its input (full recompute)
  };
  Layer& layer(int i) const { return *model_.layers()[index(i)]; }
  std::size_t index(int i) const { return static_cast<std::size_t>(begin_ + i); }  // in the model
  int size() const { return end_ - begin_; }
  // Full recompute: run layer i's forward again so that keep[i] holds its saved state.
  void restore(Saved& s, int i, const Batch& batch);
  // Runs a pass of layer i. One that accumulates its weight gradients (`writes`) is preceded by
  // the model's gradient hook (ZeRO-2 provides gradient storage there) and, when it is the
  // round's last such pass, followed by it too (the gradients are final).
  template <class F>
  auto gradientPass(int i, bool writes, bool last, F pass);

  Model& model_;
  int begin_, end_;
  Recompute recompute_;
  int passesPerRound_;
  int fullPasses_ = 0;    // micro-batches whose backward or input half ran this step
  int weightPasses_ = 0;  // micro-batches whose weight half ran this step
  std::map<int, Saved> saved_;
};

}  // namespace parascope
