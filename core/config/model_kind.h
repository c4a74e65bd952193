// What a kind of model is to the rest of the engine, once: its config keys and how they are
// read, the data it trains on, how its layers split over ranks, its FLOPs and parameter counts,
// its memory, its parameters' names and shapes, and how a rank builds it. The config reader,
// the memory estimate, the run summary, the trainer, the checkpoint layout and the front ends
// ask the model's kind instead of testing which one it is. A new kind: one file (see
// gpt_kind.cpp) and one registration line in model_kinds.cpp (and its config struct in
// ModelSpec).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/comm/comm_types.h"
#include "core/config/config_keys.h"
#include "core/parallel/pipeline_layout.h"
#include "core/tensor/tensor.h"

namespace parascope {

class Allocator;
class Communicator;
class Dataset;
class JsonReader;
class Model;
class TensorParallelRegion;
struct ModelSpec;
struct TrainConfig;

// What one layer allocates in Activation memory for one micro-batch on one tensor rank, in f32
// elements (mixed precision rounds activations in place), as its passes run: what the memory
// estimate replays over a rank's step program (core/plan/memory_estimate.cpp). A pass's peak is
// the most it holds at once above what was live when it began. A layer's input is the previous
// layer's output (the first layer's, the batch, is not an activation) and is kept until its
// backward; its backward's input is the next layer's input gradient.
struct LayerActivations {
  double output = 0;
  double kept = 0;  // kept by forward for backward, besides its input
  // The tensors of `kept` that mixed precision stores in the compute type, in the order the layer
  // keeps them: the model narrows each after the forward and widens each back to f32 before the
  // backward in this order (Model::narrowKept, widenKept), which decides those moments' peaks.
  // The rest of `kept` (Activations::exact) stays f32.
  std::vector<double> keptTensors;
  double narrowed() const {
    double n = 0;
    for (const double e : keptTensors) n += e;
    return n;
  }
  // Of `kept`, what the layer stores in the compute type itself under mixed precision, narrowed
  // or not (the GPT head's probabilities). `kept`, `forwardPeak` and `keptForWeight` count these
  // as elements like the rest; the estimate takes each at the compute type's size.
  double keptLow = 0;
  double forwardPeak = 0;  // kept and output included
  double inputGradient = 0;
  double backwardPeak = 0;  // the whole backward, its input gradient included
  // Zero-bubble's halves: the input half's peak, what it leaves the weight half in place of
  // `kept` (besides the input, and the output's gradient when keepsOutputGradient), the weight
  // half's peak. A layer that cannot split runs its whole backward as the input half.
  double inputHalfPeak = 0;
  double keptForWeight = 0;
  bool keepsOutputGradient = false;
  double weightHalfPeak = 0;
};

// One matrix product of a layer's forward for one micro-batch on one tensor rank: (m x k) by
// (k x n), `count` times (attention's per-head products). 2 m n k FLOPs each.
struct Gemm {
  double m = 0, n = 0, k = 0;
  double count = 1;
  bool weight = true;  // a product with a weight: its backward has a weight-gradient product
  double flops() const { return 2 * m * n * k * count; }
};

// A collective a layer's forward issues: over the tensor group (its backward issues the
// adjoint), or over the context group, the keys and values ring attention exchanges (its
// backward exchanges them again and reduces their gradients: the op and its adjoint).
struct LayerCollective {
  CommOp op = CommOp::AllReduce;
  double elements = 0;  // per rank, in the compute type's f32 (activations travel in f32)
  bool context = false;
};

// What one layer does for one micro-batch on one tensor rank: the cost model's input
// (core/plan/cost_model.h). Backward runs, for each forward product, its input-gradient product
// and (for weights) its weight-gradient product; element-wise passes touch about twice the
// forward's bytes.
struct LayerWork {
  std::vector<Gemm> gemms;      // forward, in order
  double elementwiseBytes = 0;  // forward's element-wise kernels: bytes read and written
  double recomputedBytes = 0;   // of those, what selective recompute runs again
  std::vector<LayerCollective> collectives;  // forward's, in order
  double flops() const;                      // the forward's matrix-product FLOPs
};

// What a rank's build hands the trainer besides the layers it added to the model.
struct BuiltModel {
  std::unique_ptr<Dataset> dataset;
  std::shared_ptr<TensorParallelRegion> region;  // null for kinds that do not split layers
};

class ModelKind {
 public:
  virtual ~ModelKind() = default;
  virtual std::string_view name() const = 0;      // model.type
  virtual std::string_view dataType() const = 0;  // the data.type it trains on
  virtual std::string_view target() const = 0;    // what a target is: "tokens", "images"
  // Evaluation reports accuracy and covers the whole validation split.
  virtual bool classifies() const = 0;
  // Its layers split over tensor- and pipeline-parallel ranks.
  virtual bool splitsLayers() const = 0;
  // Its rows of the key table, under "model." (config_keys.h).
  virtual std::vector<ConfigKey> keys() const = 0;
  // Reads its keys from the config's model block into spec.
  virtual void read(JsonReader& model, ModelSpec& spec) const = 0;
  virtual LayerSequence layers(const ModelSpec& spec) const = 0;
  // Per layer of layers(spec), for one micro-batch of config.microBatch rows on one tensor rank.
  virtual std::vector<LayerWork> layerWork(const TrainConfig& config) const = 0;
  // The targets one sample holds (a sequence's tokens, an image's label): a step's throughput
  // unit is the global batch's targets.
  virtual int targetsPerSample(const ModelSpec& spec) const = 0;
  // One micro-batch of config.microBatch rows as its dataset hands it to a step: the inputs and
  // the targets, in bytes (workspace memory, which a rank keeps for each of its step's
  // micro-batches until the step ends).
  virtual double batchBytes(const TrainConfig& config) const = 0;
  // Model FLOPs per target, forward and backward (0 where not defined).
  virtual double flopsPerTarget(const ModelSpec& spec) const = 0;
  // The whole logical model's parameters, given one rank's model.
  virtual std::int64_t parameters(const ModelSpec& spec, const Model& rankModel) const = 0;
  // UserError naming the key for a shape the planner models but the engine does not train (a
  // GPT's grouped-query attention, SwiGLU, an MLP width of its own): called before a run or a
  // switch builds anything.
  virtual void checkTrainable(const ModelSpec& spec) const = 0;
  // "gpt, 3.22M parameters (4 layers, ...)".
  virtual std::string describe(const ModelSpec& spec, double millionParameters) const = 0;
  // Per layer of layers(spec), for one micro-batch of config.microBatch rows on one tensor rank,
  // under config's recompute and sequence parallelism.
  virtual std::vector<LayerActivations> layerActivations(const TrainConfig& config) const = 0;
  // The whole model's parameters: names, full shapes, in the order the build creates them.
  virtual std::vector<std::pair<std::string, Shape>> parameterShapes(
      const ModelSpec& spec) const = 0;
  // Whether some of those shapes are known only once build() has opened the data (an image
  // classifier's input and class counts): a checkpoint's shapes are checked before any rank
  // builds the model only where they are not.
  virtual bool shapesFromData() const = 0;
  // Adds this rank's layers to `model` (its `layers` of layers(spec)) and opens its data.
  // May complete config.model from the data (an image classifier's input and class counts).
  virtual BuiltModel build(Model& model, TrainConfig& config, const Communicator& tensorGroup,
                           Allocator& allocator, const std::vector<int>& layers) const = 0;
  // The layers alone, as build adds them, for a spec already complete: what a plan of the run
  // reads its parameters from (core/plan) without opening any data.
  virtual void addLayers(Model& model, const TrainConfig& config, const Communicator& tensorGroup,
                         Allocator& allocator, const std::vector<int>& layers) const = 0;
};

const ModelKind& gptModelKind();
const ModelKind& mlpModelKind();

// Every kind, in the order model.type lists them.
const std::vector<const ModelKind*>& modelKinds();
// The kind named `name`; null for none.
const ModelKind* modelKindNamed(std::string_view name);
// The kinds whose layers split over ranks, for messages: "\"gpt\"" (or "\"a\" or \"b\"").
std::string layerSplittingKinds();

}  // namespace parascope
