// A model: named parameters plus an ordered list of layers. Running all layers in order on one
// micro-batch is the single-rank case; a pipeline stage runs a contiguous range of them.
// Mixed precision (compute type BF16 or F16): parameters and gradients are stored in that type;
// around each layer's pass the model gives the kernels f32 working copies of the layer's
// parameters (and zeroed f32 gradients, added into the stored ones with round-to-nearest-even
// afterwards), and it rounds every f32 tensor a layer outputs or returns to the compute type, so
// the values passed between layers are exactly those of the low-precision type. What a layer
// keeps from its forward for its backward is stored in the compute type itself (half the memory
// of f32), and widened to f32 again right before the layer's backward pass: the same values.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kernels/ops.h"
#include "core/model/layer.h"
#include "core/model/parameter.h"

namespace parascope {

struct MicroBatchResult {
  double lossSum = 0;        // sum of per-target losses
  std::int64_t targets = 0;  // number of targets
  std::int64_t correct = 0;  // targets predicted right (classification; 0 for forward+backward)
};

// The per-target losses a forward pass left (f32), summed in order in double on the host; a
// device's are copied there first.
double sumOfLosses(const Tensor& losses);

// What addParameter allocates. ZeRO keeps parameters (ZeRO-1 and up) and gradients (any flat
// layout) in storage of its own, a flat buffer, a shard or whole buckets while they are in use,
// and initialises it there: a model built for it holds none, so the whole model is never held
// twice, nor, under ZeRO-3, at all.
struct ModelStorage {
  bool values = true;
  bool gradients = true;
};

class Model {
 public:
  // compute: F32, or BF16 / F16 for mixed precision.
  explicit Model(Allocator& allocator = defaultAllocator(), DType compute = DType::F32,
                 ModelStorage storage = {});
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Allocates the stored value and gradient (as far as ModelStorage says); names must be unique.
  // `shape` is the logical shape; a split parameter stores only this rank's part of it
  // (parameter.h).
  Parameter& addParameter(const std::string& name, const Shape& shape, ParameterInit init,
                          bool decay, const TensorSplit& split = {});
  void addLayer(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }

  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  std::deque<Parameter>& parameters() { return parameters_; }
  const std::deque<Parameter>& parameters() const { return parameters_; }
  Parameter* find(const std::string& name);
  std::int64_t parameterCount() const;  // of the logical model, however it is split
  Allocator& allocator() const { return *allocator_; }
  // The kernels its layers run: the CPU's unless set, before any layer is added, to those of the
  // allocator's device (f32 only there so far).
  const kernels::KernelOps& ops() const { return *ops_; }
  void setOps(std::shared_ptr<const kernels::KernelOps> ops);
  DType computeType() const { return compute_; }
  bool mixedPrecision() const { return compute_ != DType::F32; }

  // Initialises the parameters the model stores (ModelStorage::values).
  void initialize(std::uint64_t seed);
  void zeroGrad();
  // A training step's start, for a caller that runs its micro-batches' backward passes next:
  // zeroes the stored gradients, but marks stale (Parameter::gradStale) the f32 ones a layer
  // writes whole, for the first pass to overwrite. Zeroing them would cost a pass over their
  // memory, and adding the first gradient to the zeros would read it all again (GPT-mini: about
  // 1 ms of a 104 ms step on one Zen 5 core). settleGradients, after the passes, zeroes any
  // still stale (a parameter no pass reached).
  void startGradients();
  void settleGradients();
  // Whether startGradients leaves p's gradient stale rather than zeroing it.
  static bool startsStale(const Parameter& p);
  // settleGradients for one parameter (a data-parallel bucket's before it is reduced).
  static void settleGradient(Parameter& p);

  // Forward and backward through every layer; gradients accumulate (+=, or = into a stale one)
  // scaled by batch.lossWeight.
  MicroBatchResult forwardBackward(const Batch& batch);
  // Called in forwardBackward right before (finished false) and right after (true) layer i's
  // backward pass. After it, the gradients of its parameters hold this micro-batch's
  // contribution (a parameter shared by several layers, like a tied embedding, is complete after
  // the last of them). Data parallelism reduces gradients from here, overlapping the backward
  // passes of earlier layers, and ZeRO-2 provides gradient storage just before a layer needs it.
  using LayerHook = std::function<void(std::size_t layer, bool finished)>;
  void addBackwardHook(LayerHook hook) { backwardHooks_.push_back(std::move(hook)); }
  // Runs the backward hooks for layer i: for callers that run layer backward passes themselves
  // (the pipeline executor, which splits and interleaves them across micro-batches). Such a caller
  // calls (i, false) before each of its passes that writes layer i's gradients and (i, true) once,
  // after the step's last one.
  void notifyBackward(std::size_t layer, bool finished) {
    for (const LayerHook& hook : backwardHooks_) hook(layer, finished);
  }
  // Around every pass that reads layer i's parameters: its forward passes (forwardLayer, so also
  // evaluation and recomputation) and its backward passes (backwardLayer and both halves), each
  // time, whoever schedules them. ZeRO-3 gathers a layer's parameters before and frees them after;
  // unlike the gradient hooks above, these fire for every micro-batch of a pipeline step.
  void addForwardHook(LayerHook hook) { forwardHooks_.push_back(std::move(hook)); }
  void addBackwardPassHook(LayerHook hook) { backwardPassHooks_.push_back(std::move(hook)); }

  // Forward only, with the number of correct predictions.
  MicroBatchResult evaluate(const Batch& batch);

  // One pass of layer i, for callers that schedule layers themselves (a pipeline stage): the
  // forward or backward-pass hooks around it, and under mixed precision the working copies, the
  // rounding and the kept tensors' storage described above. No gradient hooks (callers place them).
  // backwardInputLayer adds weight gradients only for a layer that cannot split its backward;
  // backwardWeightLayer adds them for one that can.
  // keepWide: what the layer keeps stays f32 (rounded) rather than stored in the compute type,
  // for a state its backward reads at once or that is dropped: narrowing it would only cost.
  Tensor forwardLayer(std::size_t i, const Tensor& x, const Batch& batch, Activations& keep,
                      bool keepWide = false);
  Tensor backwardLayer(std::size_t i, const Tensor& dy, const Batch& batch, Activations& keep);
  Tensor backwardInputLayer(std::size_t i, const Tensor& dy, const Batch& batch, Activations& keep);
  void backwardWeightLayer(std::size_t i, const Batch& batch, Activations& keep);

  // Mixed precision: f32 copies of every parameter's stored value in `value` (Workspace memory)
  // until releaseValues(), e.g. to save or compare weights (with ZeRO-3, after gathering them).
  // Layers running meanwhile use these copies. Nothing to do in full precision.
  void materializeValues();
  void releaseValues();

 private:
  Allocator* allocator_;
  std::shared_ptr<const kernels::KernelOps> ops_;
  std::deque<Parameter> parameters_;  // deque: layers keep pointers into it
  // find()'s index: a model of a thousand parameters is built in linear time, not quadratic.
  std::unordered_map<std::string, Parameter*> byName_;
  std::vector<std::unique_ptr<Layer>> layers_;
  // Mixed precision: working copies of layer i's parameters, and after its pass their release
  // (backward: the f32 gradients added into the stored ones first).
  void beginWorkingCopies(std::size_t i, bool backward);
  void endWorkingCopies(bool backward);
  void roundToCompute(Tensor& t) const;
  // Each f32 tensor the layer keeps, its input included, but the batch's inputs, its output and
  // the exact ones, replaced by a compute-type copy of its rounded values, in the order kept (a
  // tensor kept twice, once); and back to f32 before the layer's backward.
  void narrowKept(Activations& keep, const Batch& batch, const Tensor& y) const;
  void widenKept(Activations& keep) const;
  // Runs `pass` between the backward-pass hooks of layer i.
  template <class F>
  auto backwardPass(std::size_t i, F pass);

  DType compute_;
  ModelStorage storage_;
  std::vector<Parameter*> working_;  // parameters whose values are working copies right now
  std::vector<Parameter*> workingGrads_;
  std::vector<Parameter*> held_;  // by materializeValues()

  std::vector<LayerHook> backwardHooks_, forwardHooks_, backwardPassHooks_;
};

}  // namespace parascope
