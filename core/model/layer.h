// The unit a model is made of and a pipeline stage is cut from. A Layer maps its input to its
// output for one micro-batch, keeping in Activations what its backward pass needs, and its
// backward accumulates its parameters' gradients (+=, or = into one the step has not written yet:
// Parameter::gradStale) and returns the input gradient.
// Parameters are named logical tensors with full shapes (see parameter.h); layers only point
// at them, so a tied weight is one Parameter used by two layers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/model/parameter.h"
#include "core/tensor/tensor.h"

namespace parascope {

// One micro-batch. For the GPT: inputs (B, T) int32 token ids, targets (B, T) int32 next
// tokens. For the classifier: inputs (B, F) f32 features, targets (B) int32 labels.
struct Batch {
  Tensor inputs;
  Tensor targets;
  // Weight of each target's loss in the quantity whose gradient is accumulated, e.g.
  // 1 / (positions in the global batch), so micro-batches and ranks sum to the global mean.
  float lossWeight = 1.0f;
};

// What a layer keeps between its forward and backward pass for one micro-batch. `exact` holds
// the indices into `saved` of tensors mixed precision must leave as the layer kept them: f32 ones
// neither rounded nor stored in 16 bits (attention's softmax statistics: a row maximum rounded to
// bf16 would scale every probability the backward recomputes from it by up to 3% at a maximum of
// 10), and ones the layer stores in the compute type itself and widens part by part (the head's
// probabilities).
struct Activations {
  std::vector<Tensor> saved;
  std::vector<std::size_t> exact;
  bool isExact(std::size_t i) const {
    return std::find(exact.begin(), exact.end(), i) != exact.end();
  }
  void clear() {
    saved.clear();
    exact.clear();
  }
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual const std::string& name() const = 0;
  virtual std::vector<Parameter*> parameters() const = 0;
  // x is the previous layer's output (for the first layer: batch.inputs). The last layer
  // returns the per-target losses, shape (N).
  virtual Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) = 0;
  // dy is the gradient w.r.t. this layer's output (ignored by the last layer, which starts from
  // batch.lossWeight). Returns the gradient w.r.t. x (undefined for the first layer).
  virtual Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) = 0;

  // Zero-bubble split of backward: backwardInput returns the gradient w.r.t. x and keeps in
  // `keep` what backwardWeight needs to accumulate the parameter gradients later. A layer that
  // cannot split says so (splitsBackward false): its backwardInput is the full backward, weight
  // gradients included, and its backwardWeight does nothing.
  virtual bool splitsBackward() const { return false; }
  virtual Tensor backwardInput(const Tensor& dy, const Batch& batch, Activations& keep) {
    return backward(dy, batch, keep);
  }
  virtual void backwardWeight(const Batch& batch, Activations& keep) {
    (void)batch;
    (void)keep;
  }

  // Selective recompute: drop the cheap-to-recompute, large part of the saved activations in
  // forward and recompute it in backward (GPT Block: the attention core softmax(QK^T)V). Layers
  // without such a part keep everything (the default). Full recompute needs nothing from the
  // layer: the caller keeps the input and runs forward again (core/pipeline/pipeline_stage.h).
  virtual void setSelectiveRecompute(bool on) { (void)on; }
};

// The last layer of a model: turns its input into losses and can score predictions.
class LossLayer : public Layer {
 public:
  // Number of targets whose highest-scoring class is the target, from the saved forward.
  virtual std::int64_t correct(const Batch& batch, const Activations& keep) const = 0;
};

}  // namespace parascope
