// The MLP classifier (core/model/mlp.h) as a model kind: IDX images, one rank's layers whole.
#include <cstdio>

#include "core/config/config.h"
#include "core/config/json_reader.h"
#include "core/config/model_kind.h"
#include "core/data/idx_dataset.h"
#include "core/model/mlp.h"
#include "core/model/model.h"

namespace parascope {

namespace {

class MlpKind final : public ModelKind {
 public:
  std::string_view name() const override { return "mlp"; }
  std::string_view dataType() const override { return "idx"; }
  std::string_view target() const override { return "images"; }
  bool classifies() const override { return true; }
  bool splitsLayers() const override { return false; }

  std::vector<ConfigKey> keys() const override {
    ConfigKey k;
    k.path = "model.hidden_sizes";
    k.type = KeyType::Integers;
    k.fallback = MlpConfig{}.hiddenSizes;
    k.intMin = 1;
    k.intMax = 1 << 16;
    k.count = 16;
    k.help = "(mlp) hidden layer widths";
    return {k};
  }

  void read(JsonReader& r, ModelSpec& m) const override {
    const std::vector<std::int64_t> hidden = r.integers("hidden_sizes");
    m.mlp.hiddenSizes.assign(hidden.begin(), hidden.end());
  }

  // Every layer a block: no embedding before, no head after.
  LayerSequence layers(const ModelSpec& m) const override {
    return {0, static_cast<int>(m.mlp.hiddenSizes.size()) + 1, 0, false};
  }

  // Each layer one product and its bias and gelu (the classifier: softmax and the loss).
  std::vector<LayerWork> layerWork(const TrainConfig& c) const override {
    const MlpConfig& m = c.model.mlp;
    const double B = c.microBatch;
    std::vector<LayerWork> work;
    double in = m.inputSize;
    for (int h : m.hiddenSizes) {
      LayerWork w;
      w.gemms = {{B, static_cast<double>(h), in}};
      w.elementwiseBytes = 4 * 3 * B * h;
      work.push_back(w);
      in = h;
    }
    LayerWork classifier;
    classifier.gemms = {{B, static_cast<double>(m.numClasses), in}};
    classifier.elementwiseBytes = 4 * 4 * B * m.numClasses;
    work.push_back(classifier);
    return work;
  }

  int targetsPerSample(const ModelSpec&) const override { return 1; }
  // f32 features in, an int32 label out (idx_dataset.cpp).
  double batchBytes(const TrainConfig& config) const override {
    return static_cast<double>(config.microBatch) *
           (4.0 * static_cast<double>(config.model.mlp.inputSize) + 4);
  }
  double flopsPerTarget(const ModelSpec&) const override { return 0.0; }

  std::int64_t parameters(const ModelSpec&, const Model& rankModel) const override {
    return rankModel.parameterCount();
  }

  void checkTrainable(const ModelSpec&) const override {}  // every MLP it reads, it trains

  std::string describe(const ModelSpec&, double millions) const override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "mlp, %.2fM parameters", millions);
    return buf;
  }

  // mlp.cpp's tensors: each hidden layer keeps its pre-activation and outputs the gelu of it;
  // the classifier keeps the probabilities (their gradient in place) and outputs the losses.
  // Backward allocates the input gradient (the first layer's too) beside one of its output's
  // size. No layer splits its backward, so zero-bubble's input half is the whole of it.
  std::vector<LayerActivations> layerActivations(const TrainConfig& c) const override {
    const MlpConfig& m = c.model.mlp;
    const double B = c.microBatch;
    std::vector<LayerActivations> layers;
    auto add = [&](double in, double kept, double out, double backwardScratch) {
      LayerActivations l;
      l.output = out;
      l.kept = kept;
      l.keptTensors = {kept};
      l.forwardPeak = kept + out;
      l.inputGradient = B * in;
      l.backwardPeak = l.inputHalfPeak = backwardScratch + B * in;
      l.keptForWeight = kept;
      layers.push_back(l);
    };
    double in = m.inputSize;
    for (int h : m.hiddenSizes) {
      add(in, B * h, B * h, B * h);
      in = h;
    }
    add(in, B * m.numClasses, B, B);
    return layers;
  }

  bool shapesFromData() const override { return true; }

  std::vector<std::pair<std::string, Shape>> parameterShapes(const ModelSpec& spec) const override {
    const MlpConfig& m = spec.mlp;
    std::vector<std::pair<std::string, Shape>> t;
    std::int64_t in = m.inputSize;
    for (std::size_t i = 0; i < m.hiddenSizes.size(); ++i) {
      const std::string p = "fc." + std::to_string(i);
      const std::int64_t out = m.hiddenSizes[i];
      t.push_back({p + ".weight", {out, in}});
      t.push_back({p + ".bias", {out}});
      in = out;
    }
    t.push_back({"classifier.weight", {m.numClasses, in}});
    t.push_back({"classifier.bias", {m.numClasses}});
    return t;
  }

  BuiltModel build(Model& model, TrainConfig& config, const Communicator&, Allocator&,
                   const std::vector<int>&) const override {
    auto images = std::make_unique<IdxDataset>(config.data.path, config.seed);
    MlpConfig& m = config.model.mlp;
    m.inputSize = images->features();
    m.numClasses = images->classes();
    buildMlp(model, m);
    BuiltModel built;
    built.dataset = std::move(images);
    return built;
  }

  void addLayers(Model& model, const TrainConfig& config, const Communicator&, Allocator&,
                 const std::vector<int>&) const override {
    buildMlp(model, config.model.mlp);
  }
};

}  // namespace

const ModelKind& mlpModelKind() {
  static const MlpKind kind;
  return kind;
}

}  // namespace parascope
