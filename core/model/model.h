// A model: named parameters plus an ordered list of layers. Running all layers in order on one
// micro-batch is the single-rank case; a pipeline stage runs a contiguous range of them.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/model/layer.h"
#include "core/model/parameter.h"

namespace parascope {

struct MicroBatchResult {
  double lossSum = 0;        // sum of per-target losses
  std::int64_t targets = 0;  // number of targets
  std::int64_t correct = 0;  // targets predicted right (classification; 0 for forward+backward)
};

class Model {
 public:
  explicit Model(Allocator& allocator = defaultAllocator()) : allocator_(&allocator) {}
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Allocates value and gradient; names must be unique.
  Parameter& addParameter(const std::string& name, const Shape& shape, ParameterInit init,
                          bool decay);
  void addLayer(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  std::deque<Parameter>& parameters() { return parameters_; }
  const std::deque<Parameter>& parameters() const { return parameters_; }
  Parameter* find(const std::string& name);
  std::int64_t parameterCount() const;
  Allocator& allocator() const { return *allocator_; }

  void initialize(std::uint64_t seed);
  void zeroGrad();

  // Forward and backward through every layer; gradients accumulate (+=) scaled by
  // batch.lossWeight.
  MicroBatchResult forwardBackward(const Batch& batch);
  // Called in forwardBackward right before (finished false) and right after (true) layer i's
  // backward pass. After it, the gradients of its parameters hold this micro-batch's
  // contribution (a parameter shared by several layers, like a tied embedding, is complete after
  // the last of them). Data parallelism reduces gradients from here, overlapping the backward
  // passes of earlier layers, and ZeRO-2 provides gradient storage just before a layer needs it.
  using LayerHook = std::function<void(std::size_t layer, bool finished)>;
  void addBackwardHook(LayerHook hook) { backwardHooks_.push_back(std::move(hook)); }
  // The same around each layer's forward pass (forwardBackward and evaluate): ZeRO-3 gathers a
  // layer's parameters before it runs and frees them after.
  void addForwardHook(LayerHook hook) { forwardHooks_.push_back(std::move(hook)); }

  // Forward only, with the number of correct predictions.
  MicroBatchResult evaluate(const Batch& batch);

 private:
  Allocator* allocator_;
  std::deque<Parameter> parameters_;  // deque: layers keep pointers into it
  std::vector<std::unique_ptr<Layer>> layers_;
  Tensor forwardLayer(std::size_t i, const Tensor& x, const Batch& batch, Activations& keep);

  std::vector<LayerHook> backwardHooks_, forwardHooks_;
};

}  // namespace parascope
